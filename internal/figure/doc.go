// Package figure draws the one figure two layers share: an agreement plot, points of a measured
// value against a reference (the paper's score) with the diagonal where they agree, as a PNG.
// The report draws its evaluation against the paper with it, `evosteer calibrate` its check
// against the targets.
//
// It must not read or write files, nor import any other package of the module.
package figure
