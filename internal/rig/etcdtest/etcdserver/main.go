// Command etcdserver runs etcd's embeddable server as a process of its
// own, for tests whose daemons run in network namespaces (a server in
// the test process listens in the test's namespace, out of their
// reach). It prints "ready CLIENT-URL" once it serves, and stops on
// SIGTERM or SIGINT.
package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

func main() {
	dir := flag.String("dir", "", "data directory")
	client := flag.String("client", "127.0.0.1:2379", "client address")
	peer := flag.String("peer", "127.0.0.1:2380", "peer address")
	name := flag.String("name", "default", "member name")
	cluster := flag.String("initial-cluster", "", "the members, name=http://peer,... (default: this one alone)")
	maxTxnOps := flag.Uint("max-txn-ops", 0, "operations a transaction may have (etcd's --max-txn-ops; 0: its default, 128)")
	cert := flag.String("cert", "", "serve clients over TLS with this certificate (with -key and -ca: etcd's --cert-file)")
	key := flag.String("key", "", "its private key (etcd's --key-file)")
	ca := flag.String("ca", "", "admit clients with a certificate this CA signed only (etcd's --client-cert-auth --trusted-ca-file)")
	flag.Parse()
	cfg := embed.NewConfig()
	cfg.Dir = *dir
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cu, pu := url.URL{Scheme: "http", Host: *client}, url.URL{Scheme: "http", Host: *peer}
	if *cert != "" {
		cu.Scheme = "https"
		cfg.ClientTLSInfo.CertFile, cfg.ClientTLSInfo.KeyFile = *cert, *key
		cfg.ClientTLSInfo.TrustedCAFile, cfg.ClientTLSInfo.ClientCertAuth = *ca, *ca != ""
		cfg.ClientAutoTLS = false
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	if *maxTxnOps > 0 {
		cfg.MaxTxnOps = *maxTxnOps
	}
	cfg.Name = *name
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	if *cluster != "" {
		cfg.InitialCluster = *cluster
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdserver:", err)
		os.Exit(1)
	}
	<-e.Server.ReadyNotify()
	fmt.Println("ready", cu.String())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
	case err := <-e.Err():
		fmt.Fprintln(os.Stderr, "etcdserver:", err)
	}
	e.Close()
}
