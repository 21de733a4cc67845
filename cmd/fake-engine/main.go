// Command fake-engine serves the test suite's exact tiny language model
// (internal/executor/scoring/fakeengine) in SGLang's or vLLM's dialect on a loopback port, so a
// served reference can be tried end to end without weights or a GPU (`make served-demo`). It
// answers scoring and tokenize requests, and chat completions at /v1/chat/completions with
// deterministic "Answer: X" replies (fakeengine.Chat) so agents can run on it too (`make
// served-demo-openai`); it is a fixture, not a model server. With -log FILE it writes one JSON
// line per scoring request's prompt and per chat completion it answers (fakeengine.RequestLog).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/evosteer/evosteer-go/internal/atomicfile"
	"github.com/evosteer/evosteer-go/internal/executor/scoring/fakeengine"
)

func main() {
	if err := serve(); err != nil {
		fmt.Fprintln(os.Stderr, "fake-engine:", err)
		os.Exit(1)
	}
}

func serve() error {
	dialect := flag.String("dialect", "sglang", "the wire dialect: sglang or vllm")
	model := flag.String("model", "fake/qwen", "the model name the server serves")
	listen := flag.String("listen", "127.0.0.1:0", "the loopback address to listen on (port 0: any free port)")
	urlFile := flag.String("url-file", "", "write the server's base URL to this file once it listens")
	logFile := flag.String("log", "", "write one JSON line per scoring request's prompt (its sha256) and per chat completion answered to this file (created or truncated)")
	flag.Parse()
	var reqLog *fakeengine.RequestLog
	if *logFile != "" {
		f, err := os.Create(*logFile)
		if err != nil {
			return fmt.Errorf("-log: %w", err)
		}
		defer f.Close()
		reqLog = fakeengine.NewRequestLog(f)
	}
	var handler http.Handler
	m := fakeengine.Model{Name: *model}
	switch *dialect {
	case "sglang":
		handler = fakeengine.NewSGLang(m, fakeengine.SGLangOptions{Log: reqLog})
	case "vllm":
		handler = fakeengine.NewVLLM(m, fakeengine.VLLMOptions{Log: reqLog})
	default:
		return fmt.Errorf("-dialect %q: want sglang or vllm", *dialect)
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil {
		return fmt.Errorf("-listen %q: %w", *listen, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("-listen %q: a fixture listens on loopback only (127.0.0.1, ::1)", *listen)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String()
	if *urlFile != "" {
		if err := atomicfile.WriteBytes(*urlFile, []byte(url+"\n"), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("fake-engine: %s dialect, model %q, at %s\n", *dialect, *model, url)
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	down := make(chan struct{})
	go func() {
		defer close(down)
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-down // the requests in flight are answered (and logged) before the log closes
	if err := reqLog.Err(); err != nil {
		return fmt.Errorf("-log %s: %w", *logFile, err)
	}
	return nil
}
