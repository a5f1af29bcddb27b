//go:build !jinid_omit_daemon

package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/spf13/pflag"

	"github.com/jinid/jinid/cmd/jinid/internal/app"
	"github.com/jinid/jinid/cmd/jinid/internal/paths"
	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/mailbox"
	"github.com/jinid/jinid/services/store"
)

// shutdownGrace is how long requests in flight may take to finish once a
// stop is asked for.
const shutdownGrace = 10 * time.Second

// daemonOptions are the daemon command's flags, and what it makes of
// them.
type daemonOptions struct {
	configPath string
	cfg        app.Config
	groups     []string
	public     bool
	interval   time.Duration
	anonymous  string
	allow      []string
	javaFrom   []string
	limits     map[string]int64
	// services is the config file's static services.
	services []app.StaticService
	// printInterfaces: say what would be served, and exit.
	printInterfaces bool
}

func daemonSpec(g *globalFlags) *spec {
	o := &daemonOptions{}
	s := &spec{
		use:   "daemon",
		short: "Run the jinid appliance until SIGINT or SIGTERM",
		long: `Run the jinid appliance in the foreground, with its embedded defaults
unless flags say otherwise. It logs to standard error and stops cleanly on
SIGINT (Ctrl-C) or SIGTERM, letting requests in flight finish.

It runs the lookup service: its registrar and the lease grantor, keeping
every acknowledged change in --data-dir before answering (so a crash
loses nothing acknowledged); unicast discovery on --discovery-port; and,
unless --no-multicast, announcements on every suitable interface (each
carrying that interface's address) and answers to multicast requests.
It logs one line per interface saying whether and why it is served.

Java Jini programs (JGDMS, with the registrar proxy classes on their class
path) use the same lookup service: unicast responses carry a real Java
registrar proxy, and they call it over Jini ERI on --java-port. Java
programs send no token: they may look up as --anonymous allows, and
register services from the networks of --java-register-from (or from
anywhere with --anonymous client). --no-java turns this off; the router
build does not have it. See docs/java.md.

It also runs the lookup discovery service (/v1/lds/...): clients register
groups and locators of interest and a listener URL, and jinid discovers
lookup services for them and POSTs RemoteDiscoveryEvents (see
"jinid lds --help"), and the lease renewal service (/v1/renewal/...):
clients hand it their leases and it renews them until a desired
expiration (see "jinid renewal --help").

Every setting is a flag, a JSON config file key and an environment
variable (JINID_ and the flag's name: --data-dir is JINID_DATA_DIR). The
command line wins over the environment, which wins over the config file
(--config, or /etc/jinid/jinid.json when it exists), which wins over the
defaults. "jinid config check" validates a file, "jinid config print"
shows what the daemon would run with and where each value comes from. For
example:

  {"schemaVersion": 1, "groups": ["lab"], "publicGroup": true, "announceInterval": "120s",
   "interfaces": ["eth*", "br-lan"], "dataDir": "/var/lib/jinid",
   "apiListen": ":4162", "discoveryPort": 4160, "multicast": true,
   "dnsSD": true, "ldsAnnounceInterval": "120s", "renewalMargin": "30s",
   "logLevel": "info", "logFormat": "text", "apiSocket": "/run/jinid/jinid.sock",
   "socketGroup": "jinid", "anonymous": "read", "apiHosts": ["gw.lan"],
   "mailboxQuota": 100000, "limits": {"apiConns": 256},
   "snapshotDir": "", "snapshotInterval": "6h"}

SIGHUP re-reads the configuration: groups, interfaces, quotas, limits'
quotas and the log level change at once; the log names anything else that changed as
taking effect at the next start, and a file that does not validate is
refused, the running configuration kept.

With --store etcd, the data is kept in an etcd cluster instead of
--data-dir: every change is committed by the cluster before it is
acknowledged. One jinid at a time holds a prefix (an etcd lease,
--etcd-lease-ttl) and does the work; the others wait, announcing the
registry on their own segments, answering its reads from a copy fed by
etcd (at most a second behind; a client's own changes at once) and
forwarding the rest to the holder, and one takes over when it stops,
dies or is cut off from etcd
(it stops acting first, and exits). Every node holds a share of the
renewal service's sets, the mailbox's registrations, the transactions
and the event registrations (16 shards, reached by the other nodes on
--cluster-listen), and its shards go to the others when it leaves. etcd
on another host is reached over TLS with a client certificate
(--etcd-cert, --etcd-key, --etcd-ca), or not at all without
--etcd-insecure; --cluster-ca admits as nodes only certificates the
site's CA signed. See docs/cluster.md and docs/security.md ("Cluster");
jinid cluster status shows the nodes and their shards.
The router build has no etcd.

With --snapshot-dir, the live store may sit on a tmpfs (OpenWrt's /var):
a snapshot goes to the snapshot directory every --snapshot-interval, at a
clean stop and on "jinid snapshot", and a missing live store is restored
from it at start (docs/operations.md).

Endpoints (on --api-listen, and on the local socket --api-socket):
  GET /          the status page, for a browser (read scope)
  GET /metrics   Prometheus metrics (read scope)
  GET /healthz   liveness, JSON checks: 200 while the process can serve
  GET /readyz    readiness, JSON checks: 503 naming what fails
  /v1/...        the client API (see docs/api/openapi.yaml)

Access (docs/security.md): on the local socket every request is the
administrator's (its mode is 0660: the daemon's user and --socket-group
may use it), and the CLI on this host uses it without a token. Over the
network a request carries a bearer token ("jinid token --help"); without
one it may do what --anonymous says (read: look, never change). The first
start writes an admin token to admin.token in --data-dir. The API answers
only to its own addresses and names (--api-host adds some) and takes JSON
bodies only, so a web page cannot drive it from a LAN user's browser.

Requests jinid sends on clients' behalf (events to listeners, mailbox
pushes, lease renewals) never go to loopback, link-local, multicast or
this host's own addresses, nor follow redirects, unless --allow-outbound
names the prefix. Every URL and locator it hands out carries the address
the peer reached it at, or --advertise.`,
		example: `  jinid daemon
  jinid daemon --groups lab,ops --interfaces 'eth*' --data-dir /var/lib/jinid
  jinid daemon --no-multicast --api-listen 127.0.0.1:4162 --log-format json
  jinid daemon --anonymous none --api-tls-cert gw.crt --api-tls-key gw.key --advertise gw.example.org`,
		run: func(inv *invocation, _ []string) error {
			given := commandLine(inv.flags)
			file, cfg, errs := o.settle(inv.flags, g, os.LookupEnv, o.configPath)
			if len(errs) > 0 {
				return configErrors(errs)
			}
			log, level, err := g.logger(inv.stderr)
			if err != nil {
				return err
			}
			if file != "" {
				log.Info("configuration read", "file", file)
			}
			cfg.Version = version
			if o.printInterfaces {
				return writeInterfaces(inv.stdout, cfg)
			}
			d, err := app.New(cfg, log)
			if err != nil {
				return err
			}
			if os.Getenv("GOMEMLIMIT") == "" {
				// A soft limit: the collector works harder as the heap
				// nears it, so bursts (a flood, large listings) are given
				// back at once instead of doubling the heap. GOMEMLIMIT
				// overrides it.
				debug.SetMemoryLimit(int64(cmp.Or(cfg.Limits.MemoryBytes, app.DefaultLimits().MemoryBytes)))
			}
			// Caught before the start line: a SIGHUP sent once it is
			// logged must reload, not kill (the signal's default).
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			ctx := inv.ctx
			if err := d.Start(ctx); err != nil {
				if ctx.Err() != nil {
					// Stopped while starting: a cluster's standby waiting
					// to take over the store, the usual case. Nothing
					// failed (it exited 1, "context canceled").
					log.Info("stopping before the start was done", "reason", "signal", "err", err)
					return nil
				}
				return err
			}
			// Under systemd (Type=notify): started. Nothing is sent
			// elsewhere (no NOTIFY_SOCKET).
			notify(log, daemon.SdNotifyReady)
			r := &reloader{given: given, log: log, level: level, daemon: d, values: settingValues(inv.flags)}
			var runErr error
		run:
			for {
				select {
				case <-hup:
					notify(log, daemon.SdNotifyReloading)
					r.reload()
					notify(log, daemon.SdNotifyReady)
				case <-ctx.Done():
					log.Info("stopping", "reason", "signal")
					break run
				case runErr = <-d.Err():
					log.Error("stopping", "reason", runErr)
					break run
				}
			}
			notify(log, daemon.SdNotifyStopping)
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
			defer cancel()
			if err := d.Shutdown(sctx); err != nil {
				return err
			}
			return runErr
		},
	}
	o.bind(s.Flags())
	return s
}

// bind defines the daemon's flags on f.
func (o *daemonOptions) bind(f *pflag.FlagSet) {
	cfg := &o.cfg
	f.StringVar(&cfg.APIListen, "api-listen", app.DefaultAPIListen, "address (host:port) of the HTTP client API and /healthz")
	f.StringVar(&o.configPath, "config", "", "JSON config file (default "+DefaultConfigFile+" when it exists); flags override it")
	f.StringVar(&cfg.DataDir, "data-dir", paths.DefaultDataDir(), "directory of the crash-safe store (registrations, leases, sequence numbers)")
	f.StringSliceVar(&o.groups, "groups", nil, "member groups of the lookup service (default: as stored; the public group at first start)")
	f.BoolVar(&o.public, "public-group", true, `be a member of the public group (""), beside --groups; with neither given: as stored`)
	f.DurationVar(&o.interval, "announce-interval", 120*time.Second, "time between multicast announcements (at least 100ms)")
	interfaceFlags(f, &cfg.Include, &cfg.Exclude, &cfg.ExcludeDefaultRoute)
	f.BoolVar(&o.printInterfaces, "print-interfaces", false, "print every interface with whether multicast discovery would be served on it and why (as the start-up log says), then exit")
	f.BoolVar(&cfg.NoMulticast, "no-multicast", false, "no announcements and no answers to multicast requests (unicast discovery only)")
	f.IntVar(&cfg.DiscoveryPort, "discovery-port", discovery.Port, "TCP port of unicast discovery (0: any free port)")
	f.BoolVar(&cfg.NoDNSSD, "no-dns-sd", false, "do not advertise the lookup service over mDNS as _jini._tcp.local")
	f.BoolVar(&cfg.NoTransactions, "no-transactions", false, "do not run the transaction manager (its routes answer that it does not run)")
	f.BoolVar(&cfg.NoJava, "no-java", false, "do not serve Java clients: no Jini ERI port, no Java registrar proxy in unicast responses")
	f.StringSliceVar(&o.javaFrom, "java-register-from", nil, "prefixes (e.g. 192.168.1.0/24) whose Java clients may register services; with --anonymous client or admin, any may")
	f.IntVar(&cfg.JavaPort, "java-port", 0, "TCP port Java clients call the lookup service on (Jini ERI); 0: the port of the last run, a free one at first")
	f.IntVar(&cfg.MailboxMaxPerRegistration, "mailbox-quota", mailbox.DefaultMaxPerRegistration, "events the event mailbox stores for one registration; beyond, senders are told to retry")
	f.IntVar(&cfg.MailboxMaxEvents, "mailbox-total-quota", mailbox.DefaultMaxEvents, "events the event mailbox stores in all")
	f.DurationVar(&cfg.RenewalMargin, "renewal-margin", 30*time.Second,
		"the lease renewal service renews client leases this long (plus twice the grantor's round trip) before they expire")
	f.DurationVar(&cfg.LDSAnnounceInterval, "lds-announce-interval", 120*time.Second,
		"how often the lookup discovery service expects lookup services to announce; silent for 3 intervals and unreachable means discarded")
	f.StringVar(&cfg.APISocket, "api-socket", paths.DefaultSocket(), `unix socket of the API for this host's administrator (no token; "none": no socket)`)
	f.StringVar(&cfg.SocketGroup, "socket-group", "", "group (name or number) that may use the API socket besides the daemon's user")
	f.StringVar(&o.anonymous, "anonymous", "read", "what a network request without a token may do: none, read, client or admin")
	f.StringSliceVar(&cfg.APIHosts, "api-host", nil, "further names the API answers to in the Host header (its addresses, localhost and the host name always work)")
	f.StringVar(&cfg.Advertise, "advertise", "", "host (address or DNS name) to put in every URL and locator handed out, instead of the address the peer reached")
	f.StringSliceVar(&o.allow, "allow-outbound", nil, "prefixes (e.g. 127.0.0.0/8,fe80::/10) requests on clients' behalf may go to although they are loopback, link-local or this host's")
	f.StringVar(&cfg.TLSCert, "api-tls-cert", "", "PEM certificate (chain) to serve the network API over HTTPS (with --api-tls-key)")
	f.StringVar(&cfg.TLSKey, "api-tls-key", "", "PEM private key of --api-tls-cert")
	f.StringToInt64Var(&o.limits, "limit", nil, "limits as name=value,... (the config file's limits keys, e.g. apiConns=128,bodyBytes=262144; docs/security.md lists them); others keep the config file's or their defaults")
	f.StringVar(&cfg.SnapshotDir, "snapshot-dir", "", "keep the live store in --data-dir (a tmpfs, say) and snapshots of it here (persistent storage), restored at start when the live store is missing; \"\": no snapshots")
	f.StringVar(&cfg.ServicesDir, "services-dir", app.DefaultServicesDir, "directory of static services, a JSON file each (types, attributes, endpoint): registered here for as long as it names them, re-read on SIGHUP (docs/operations.md)")
	f.DurationVar(&cfg.SnapshotInterval, "snapshot-interval", app.DefaultSnapshotInterval, "with --snapshot-dir: time between snapshots (also taken at a clean stop and by \"jinid snapshot\")")
	f.StringVar(&cfg.Store, "store", "embedded", "where the daemon keeps its data: embedded (a file in --data-dir) or etcd (a cluster, --etcd-endpoints: one active jinid per --etcd-prefix, others waiting to take over)")
	f.StringSliceVar(&cfg.Etcd.Endpoints, "etcd-endpoints", nil, "with --store etcd: the cluster's client URLs, comma-separated (http://10.0.0.2:2379,...)")
	f.StringVar(&cfg.Etcd.Prefix, "etcd-prefix", store.DefaultEtcdPrefix, "with --store etcd: the store's key prefix (one per jinid deployment)")
	f.StringVar(&cfg.Etcd.CertFile, "etcd-cert", "", "with --store etcd: PEM client certificate for the cluster (with --etcd-key)")
	f.StringVar(&cfg.Etcd.KeyFile, "etcd-key", "", "with --store etcd: PEM private key of --etcd-cert")
	f.StringVar(&cfg.Etcd.CAFile, "etcd-ca", "", "with --store etcd: PEM certificate authority of the cluster's certificates")
	f.BoolVar(&cfg.Etcd.Insecure, "etcd-insecure", false, "with --store etcd: reach etcd on another host over plain http, or TLS without a client certificate, anyway (whoever reaches etcd can then write the store: tokens, members; warned at every start)")
	f.DurationVar(&cfg.Etcd.LeaseTTL, "etcd-lease-ttl", store.DefaultLeaseTTL, "with --store etcd: the hold's etcd lease, 2s to 5m: a dead holder's standby takes over after it; a holder cut off from etcd stops acting a fifth of it before (docs/cluster.md)")
	f.StringVar(&cfg.ClusterListen, "cluster-listen", app.DefaultClusterListen, "with --store etcd: where this node serves the other nodes (the shards of the cluster's work it holds), over TLS that only members pass")
	f.StringVar(&cfg.ClusterCA, "cluster-ca", "", "with --store etcd: PEM certificate authority of the site; the nodes admit on the cluster port only certificates it signed (recommended: docs/cluster.md), with --cluster-cert and --cluster-key")
	f.StringVar(&cfg.ClusterCert, "cluster-cert", "", "with --cluster-ca: PEM certificate of this node, signed by the site's CA")
	f.StringVar(&cfg.ClusterKey, "cluster-key", "", "with --cluster-ca: PEM private key of --cluster-cert")
	f.StringVar(&cfg.Etcd.Node, "node", "", "with --store etcd: this node's name in the cluster (jinid cluster status); default: the host name and process ID")
}

// resolve reads the config file (--config, or the default one if it
// exists) and applies the environment and the file under the command
// line's flags. It returns the file read ("" for none) and where each
// setting came from.
func (o *daemonOptions) resolve(f *pflag.FlagSet, env func(string) (string, bool)) (string, sources, error) {
	c, errs := readConfig(o.configPath)
	if c == nil && len(errs) > 0 {
		return "", nil, errors.Join(errs...) // not read at all
	}
	// A file read with errors in its shape is applied all the same, so
	// that every error of its values and of the environment is found
	// too (as config check lists them).
	src, rerrs := resolve(f, c, env)
	if errs = append(errs, rerrs...); len(errs) > 0 {
		return "", nil, errors.Join(errs...)
	}
	if c == nil {
		return "", src, nil
	}
	o.services = c.services
	return c.path, src, nil
}

// settle resolves the daemon's settings (the file, the environment, the
// command line) and makes its configuration. errs are every error found,
// those of values prefixed with name (the file's, if any): what config
// check lists, and what the daemon prints before it exits 2.
func (o *daemonOptions) settle(f *pflag.FlagSet, g *globalFlags, env func(string) (string, bool), name string) (file string, cfg app.Config, errs []error) {
	file, _, err := o.resolve(f, env)
	if err != nil {
		errs = append(errs, leaves(err)...)
	}
	prefix := func(e error) error {
		if name == "" {
			return e
		}
		return fmt.Errorf("%s: %w", name, e)
	}
	if _, err := parseLevel(g.logLevel); err != nil {
		errs = append(errs, prefix(fmt.Errorf("logLevel: %w", err)))
	}
	cfg, err = o.config(f)
	if err != nil {
		for _, e := range leaves(err) {
			errs = append(errs, prefix(e))
		}
	}
	return file, cfg, errs
}

// config makes the daemon's configuration of the resolved flags, or
// says everything wrong with them (errors.Join).
func (o *daemonOptions) config(f *pflag.FlagSet) (app.Config, error) {
	cfg := o.cfg
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	if f.Changed("groups") || f.Changed("public-group") {
		// "" (the public group's name) is publicGroup's to say, as in
		// the file and the environment.
		cfg.Groups = slices.DeleteFunc(slices.Clone(o.groups), func(g string) bool { return g == "" })
		if o.public {
			cfg.Groups = append(cfg.Groups, "")
		}
		for _, g := range o.groups {
			if err := discovery.CheckGroup(g); g != "" && err != nil {
				add(fmt.Errorf("--groups: %w", err))
			}
		}
	}
	cfg.AnnounceInterval = o.interval
	if !f.Changed("exclude-interfaces") {
		cfg.Exclude = nil
	}
	var err error
	if cfg.Anonymous, err = access.ParseAnonymous(o.anonymous); err != nil {
		add(fmt.Errorf("--anonymous: %w", err))
		cfg.Anonymous = "" // said once
	}
	if cfg.AllowOutbound, err = parsePrefixes(o.allow); err != nil {
		add(fmt.Errorf("--allow-outbound: %w", err))
	}
	if cfg.JavaRegisterFrom, err = parsePrefixes(o.javaFrom); err != nil {
		add(fmt.Errorf("--java-register-from: %w", err))
	}
	if cfg.Limits, err = limitsOf(o.limits); err != nil {
		add(err)
	}
	if cfg.APISocket == "none" {
		cfg.APISocket = ""
	}
	cfg.Services = o.services
	if !f.Changed("api-socket") && f.Changed("data-dir") && paths.SocketInDataDir() {
		// A user with no runtime directory: the socket goes beside the
		// data it was told of, not under a home that may not exist
		// (nobody's is /nonexistent).
		cfg.APISocket = filepath.Join(cfg.DataDir, "jinid.sock")
	}
	if err := cfg.Validate(); err != nil {
		add(err)
	}
	if len(errs) > 0 {
		// A configuration that cannot run is a mistake in how the
		// daemon was called (exit 2), whichever of flag, environment
		// and file it came from.
		return cfg, usageError{err: errors.Join(errs...)}
	}
	return cfg, nil
}

// commandLine records the flags the command line set, as text, so that
// a reload applies them again over a re-read config file.
func commandLine(f *pflag.FlagSet) map[string]string {
	given := map[string]string{}
	f.Visit(func(fl *pflag.Flag) {
		switch v := fl.Value.(type) {
		case pflag.SliceValue:
			given[fl.Name] = strings.Join(v.GetSlice(), ",")
		default:
			given[fl.Name] = strings.TrimSuffix(strings.TrimPrefix(v.String(), "["), "]")
		}
	})
	return given
}

// notify tells systemd how the daemon stands, when it runs under it.
func notify(log *slog.Logger, state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		log.Warn("telling systemd how the daemon stands failed", "state", state, "err", err)
	}
}

// parsePrefixes reads CIDR prefixes; a lone address is its own prefix.
func parsePrefixes(ss []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range ss {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q: want a prefix such as 127.0.0.0/8 or fe80::/10, or an address", s)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
