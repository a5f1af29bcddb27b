package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/jinid/jinid/internal/daemon"
)

// shutdownGrace is how long requests in flight may take to finish once a
// stop is asked for.
const shutdownGrace = 10 * time.Second

func newDaemonCmd(g *globalFlags) *cobra.Command {
	var cfg daemon.Config
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Run the jinid appliance until SIGINT or SIGTERM",
		Long: `Run the jinid appliance in the foreground, with its embedded defaults
unless flags say otherwise. It logs to standard error and stops cleanly on
SIGINT (Ctrl-C) or SIGTERM, letting requests in flight finish.

It runs the lookup service's registrar and the lease grantor, keeping
every acknowledged change in --data-dir before answering (so a crash
loses nothing acknowledged).

Endpoints (on --api-listen):
  GET /healthz   200 while the daemon serves
  /v1/...        the client API (see docs/api/openapi.yaml)`,
		Example: `  jinid daemon
  jinid daemon --api-listen 127.0.0.1:4162 --data-dir /var/lib/jinid --log-format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := g.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			d, err := daemon.New(cfg, log)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if err := d.Start(ctx); err != nil {
				return err
			}
			var runErr error
			select {
			case <-ctx.Done():
				log.Info("stopping", "reason", "signal")
			case runErr = <-d.Err():
				log.Error("stopping", "reason", runErr)
			}
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
			defer cancel()
			if err := d.Shutdown(sctx); err != nil {
				return err
			}
			return runErr
		},
	}
	cmd.Flags().StringVar(&cfg.APIListen, "api-listen", daemon.DefaultAPIListen, "address (host:port) of the HTTP client API and /healthz")
	cmd.Flags().StringVar(&cfg.DataDir, "data-dir", daemon.DefaultDataDir(), "directory of the crash-safe store (registrations, leases, sequence numbers)")
	return cmd
}
