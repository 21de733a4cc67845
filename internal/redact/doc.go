// Package redact removes an API key from text bound for an error, a log or a run file: the whole
// key and every fragment of it of MinFragment bytes or more, so that text echoed by a server
// and then cut (or cut by the server) cannot keep a usable part of the key.
//
// It must not log, store or return the key, and must not cut text before redacting it.
package redact
