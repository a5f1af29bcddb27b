// Package daemon runs jinid's long-lived services in one process: today
// the operations endpoint; the discovery, lookup and helper services join
// it as they land.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// DefaultAPIListen is where the client API and the operations endpoints
// listen unless told otherwise.
const DefaultAPIListen = ":4162"

// Config is what the daemon is told at start.
type Config struct {
	// APIListen is the TCP address (host:port) of the HTTP server.
	APIListen string
}

// Validate reports the first thing wrong with c.
func (c Config) Validate() error {
	host, port, err := net.SplitHostPort(c.APIListen)
	if err != nil {
		return fmt.Errorf("API listen address %q: want host:port (e.g. %s or 127.0.0.1:4162): %w", c.APIListen, DefaultAPIListen, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("API listen address %q: port %q is not a number from 0 to 65535", c.APIListen, port)
	}
	if host != "" && net.ParseIP(host) == nil {
		return fmt.Errorf("API listen address %q: host %q is not an IP address (leave it empty to listen on all)", c.APIListen, host)
	}
	return nil
}

// Daemon owns the process's services. Start it once, Shutdown it once.
type Daemon struct {
	cfg Config
	log *slog.Logger

	srv  *http.Server
	ln   net.Listener
	wg   sync.WaitGroup
	errc chan error
}

// New checks cfg and returns a Daemon ready to Start.
func New(cfg Config, log *slog.Logger) (*Daemon, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Daemon{cfg: cfg, log: log, errc: make(chan error, 1)}, nil
}

// Start listens and begins serving; it returns once the listener is open,
// so a failure to bind is reported here.
func (d *Daemon) Start(ctx context.Context) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", d.cfg.APIListen)
	if err != nil {
		return fmt.Errorf("listening for the API on %s: %w", d.cfg.APIListen, err)
	}
	d.ln = ln
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	d.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(d.log.Handler(), slog.LevelWarn),
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := d.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.errc <- fmt.Errorf("serving the API: %w", err)
		}
	}()
	d.log.Info("jinid started", "api", "http://"+ln.Addr().String())
	return nil
}

// Addr is the address the API listens on, once started.
func (d *Daemon) Addr() net.Addr { return d.ln.Addr() }

// Err reports a service that failed while running; the caller should shut
// down.
func (d *Daemon) Err() <-chan error { return d.errc }

// Shutdown stops every service, waiting for requests in flight until ctx
// ends, and returns once all of the daemon's goroutines have.
func (d *Daemon) Shutdown(ctx context.Context) error {
	if d.srv == nil {
		return nil
	}
	err := d.srv.Shutdown(ctx)
	d.wg.Wait()
	if err != nil {
		return fmt.Errorf("stopping the API server: %w", err)
	}
	d.log.Info("jinid stopped")
	return nil
}
