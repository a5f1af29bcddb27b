//go:build !jinid_omit_daemon

package main

import (
	"bufio"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/jinid/jinid/cmd/jinid/internal/app"
	"github.com/jinid/jinid/cmd/jinid/internal/paths"
	"github.com/jinid/jinid/services/store"
)

// storeFlags say which store a store command works on: the embedded one
// in --data-dir, or one in etcd, as the daemon's flags of the same names.
type storeFlags struct {
	dataDir, kind string
	etcd          store.EtcdConfig
}

func (f *storeFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.dataDir, "data-dir", paths.DefaultDataDir(), "the embedded store's directory")
	fs.StringVar(&f.kind, "store", app.StoreEmbedded, "embedded or etcd")
	f.bindEtcd(fs, "with --store etcd: ")
}

// bindEtcd binds the flags that say where the store in etcd is.
func (f *storeFlags) bindEtcd(fs *pflag.FlagSet, with string) {
	fs.StringSliceVar(&f.etcd.Endpoints, "etcd-endpoints", nil, with+"the cluster's client URLs")
	fs.StringVar(&f.etcd.Prefix, "etcd-prefix", store.DefaultEtcdPrefix, with+"the store's key prefix")
	fs.StringVar(&f.etcd.CertFile, "etcd-cert", "", with+"PEM client certificate")
	fs.StringVar(&f.etcd.KeyFile, "etcd-key", "", with+"its PEM private key")
	fs.StringVar(&f.etcd.CAFile, "etcd-ca", "", with+"PEM certificate authority of the cluster")
}

// open opens the store, which no daemon may be using: the embedded
// store's file is locked by one, a store in etcd held by one.
func (f *storeFlags) open(inv *invocation) (*store.Store, error) {
	switch f.kind {
	case app.StoreEmbedded:
		if len(f.etcd.Endpoints) > 0 {
			return nil, usagef("--etcd-endpoints applies to --store etcd")
		}
		return store.Open(f.dataDir)
	case app.StoreEtcd:
		if len(f.etcd.Endpoints) == 0 {
			return nil, usagef("--store etcd needs --etcd-endpoints")
		}
		cfg := f.etcd
		cfg.Exclusive, cfg.NoWait, cfg.Node = true, true, "jinid store"
		return store.OpenEtcd(inv.ctx, cfg)
	}
	return nil, usagef("--store %q: want embedded or etcd", f.kind)
}

func storeSpec() *spec {
	return &spec{
		use:   "store",
		short: "Export a stopped daemon's store, or import one: to move a single box to etcd and back",
		long: `Copy the daemon's state between stores while no daemon uses them: export
writes every key of a store (the embedded one in --data-dir, or one in
etcd with --store etcd) as JSON lines; import writes such an export into
an empty store. A single box moves to a cluster with an export of its
data directory imported into etcd ("jinid store import --store etcd
--etcd-endpoints http://10.0.0.2:2379 jinid.export"), and back the other
way. A store a daemon uses is refused (stop the daemon first).`,
		subs: []*spec{storeExportSpec(), storeImportSpec()},
	}
}

func storeExportSpec() *spec {
	var f storeFlags
	s := &spec{
		use:     "export [--data-dir DIR | --store etcd --etcd-endpoints URL,...] > FILE",
		short:   "Write every key of a store as JSON lines on the standard output",
		example: `  jinid store export --data-dir /var/lib/jinid > jinid.export`,
		args:    maxArgs(0),
		run: func(inv *invocation, _ []string) error {
			st, err := f.open(inv)
			if err != nil {
				return err
			}
			defer st.Close()
			w := bufio.NewWriter(inv.stdout)
			n, err := st.Export(w)
			if err == nil {
				err = w.Flush()
			}
			if err != nil {
				return err
			}
			if quiet, _ := inv.flags.GetBool("quiet"); !quiet {
				fmt.Fprintf(inv.stderr, "exported %d keys of %s\n", n, st.Path())
			}
			return nil
		},
	}
	f.bind(s.Flags())
	return s
}

func storeImportSpec() *spec {
	var f storeFlags
	s := &spec{
		use:   "import [--data-dir DIR | --store etcd --etcd-endpoints URL,...] [FILE]",
		short: "Write an export (a file, or the standard input) into an empty store",
		example: `  jinid store export --data-dir /var/lib/jinid > jinid.export
  jinid store import --data-dir /var/lib/jinid-copy jinid.export`,
		args: maxArgs(1),
		run: func(inv *invocation, args []string) error {
			in := inv.stdin
			if len(args) == 1 {
				file, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer file.Close()
				in = file
			}
			st, err := f.open(inv)
			if err != nil {
				return err
			}
			defer st.Close()
			n, err := st.Import(bufio.NewReader(in))
			if err != nil {
				return fmt.Errorf("after %d keys: %w", n, err)
			}
			return done(inv, "imported %d keys into %s", n, st.Path())
		},
	}
	f.bind(s.Flags())
	return s
}
