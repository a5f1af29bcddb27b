//go:build !jinid_omit_daemon && !jinid_omit_etcd

package main

import (
	"strings"
	"testing"
)

// Settings naming etcd on another host over plain http are refused,
// saying how to reach it safely and how to run so anyway; with
// --etcd-insecure (etcdInsecure) they pass. (The daemon refusing them:
// TestDaemonRefusesInsecureEtcd, in a lab, where a regression would
// connect nowhere real.)
func TestConfigEtcdInsecure(t *testing.T) {
	plain := writeConfig(t, `{"store":"etcd","etcdEndpoints":["http://10.0.0.2:2379"]}`)
	out, _, err := run(t, nil, "config", "check", plain)
	if err == nil || !strings.Contains(out, "plain http to another host") || !strings.Contains(out, "--etcd-insecure") {
		t.Fatalf("config check of etcd over plain http: %q %v", out, err)
	}
	allowed := writeConfig(t, `{"store":"etcd","etcdEndpoints":["http://10.0.0.2:2379"],"etcdInsecure":true}`)
	if out, _, err := run(t, nil, "config", "check", allowed); err != nil {
		t.Fatalf("config check with etcdInsecure: %q %v", out, err)
	}
}
