// Package daemon runs jinid's long-lived services in one process: the
// store, the lease grantor, event delivery, the lookup service's registrar
// and the HTTP API with its operations endpoints.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/clock"
	"github.com/jinid/jinid/lookup"
	"github.com/jinid/jinid/services/api"
	"github.com/jinid/jinid/services/event"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/store"
)

// DefaultAPIListen is where the client API and the operations endpoints
// listen unless told otherwise.
const DefaultAPIListen = ":4162"

// Config is what the daemon is told at start.
type Config struct {
	// APIListen is the TCP address (host:port) of the HTTP server.
	APIListen string
	// DataDir holds the store.
	DataDir string
}

// DefaultDataDir is where state lives unless told otherwise: the system
// place for a daemon run as root, the user's state directory otherwise.
func DefaultDataDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/jinid"
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "jinid")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "jinid")
	}
	return "jinid-data"
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
	if c.DataDir == "" {
		return errors.New("data directory: none given")
	}
	return nil
}

// Daemon owns the process's services. Start it once, Shutdown it once.
type Daemon struct {
	cfg Config
	log *slog.Logger

	srv        *http.Server
	ln         net.Listener
	wg         sync.WaitGroup
	errc       chan error
	store      *store.Store
	grantor    *lease.Grantor
	dispatcher *event.Dispatcher
	registrar  *lookup.Registrar
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
	if err := d.openServices(); err != nil {
		d.closeServices()
		return err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", d.cfg.APIListen)
	if err != nil {
		d.closeServices()
		return fmt.Errorf("listening for the API on %s: %w", d.cfg.APIListen, err)
	}
	d.ln = ln
	mux := http.NewServeMux()
	api.Register(mux, api.Config{Grantor: d.grantor, Registrar: d.registrar, Logger: d.log, UnicastPort: discovery.Port})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	d.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(d.log.Handler(), slog.LevelWarn),
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := d.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.errc <- fmt.Errorf("serving the API: %w", err)
		}
	}()
	items, notifies := d.registrar.Count()
	d.log.Info("jinid started", "api", "http://"+ln.Addr().String(), "data", d.store.Path(),
		"lookup", d.registrar.Meta().ServiceID, "registrations", items, "notify_registrations", notifies)
	return nil
}

// openServices opens the store and the services on it, in dependency
// order; closeServices undoes what was opened.
func (d *Daemon) openServices() error {
	st, err := store.Open(d.cfg.DataDir)
	if err != nil {
		return err
	}
	d.store = st
	d.grantor = lease.New(st, clock.Real{}, d.log)
	d.dispatcher = event.New(event.Config{Logger: d.log})
	d.registrar, err = lookup.New(lookup.Config{Store: st, Grantor: d.grantor, Dispatcher: d.dispatcher, Logger: d.log})
	if err != nil {
		return err
	}
	return d.grantor.Load()
}

func (d *Daemon) closeServices() {
	if d.grantor != nil {
		d.grantor.Close()
	}
	if d.dispatcher != nil {
		d.dispatcher.Close()
	}
	if d.store != nil {
		d.store.Close()
	}
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
	d.closeServices()
	if err != nil {
		return fmt.Errorf("stopping the API server: %w", err)
	}
	d.log.Info("jinid stopped")
	return nil
}
