package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// serveDebug serves Go's profiles (net/http/pprof) on addr until ctx ends; it returns once the
// listener is up, with the address it listens on, and the returned wait blocks until the server
// has stopped. The profiles show
// stacks and heap contents, never request bodies, but they are for an operator's port-forward
// only: off unless A2AC_DEBUG_ADDR is set, and the Helm chart exposes no Service for it.
func serveDebug(ctx context.Context, addr string, log *slog.Logger) (wait func(), listening string, err error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("listen %s (A2AC_DEBUG_ADDR): %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("debug server stopped", slog.Any("error", err))
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close() // profiles in flight are cut: nothing depends on them
	}()
	log.Info("debug profiles served", "addr", "http://"+ln.Addr().String()+"/debug/pprof/")
	return func() { <-done }, ln.Addr().String(), nil
}
