//go:build !jinid_omit_etcd

package app

import (
	"strings"
	"testing"
)

// etcd on another host is reached over TLS with a client certificate,
// or not at all unless --etcd-insecure says so; loopback needs neither.
func TestEtcdInsecureRefused(t *testing.T) {
	for _, tc := range []struct {
		endpoints []string
		cert      string
		insecure  bool
		want      string // "" valid; else a part of the error
	}{
		{[]string{"http://10.0.0.2:2379"}, "", false, "plain http to another host"},
		{[]string{"https://10.0.0.2:2379", "http://etcd.example.org:2379"}, "c.crt", false, "etcd.example.org:2379 is plain http"},
		{[]string{"https://10.0.0.2:2379"}, "", false, "TLS without a client certificate"},
		{[]string{"https://10.0.0.2:2379"}, "c.crt", false, ""},
		{[]string{"http://10.0.0.2:2379"}, "", true, ""},
		{[]string{"http://127.0.0.1:2379", "http://[::1]:2379", "http://localhost:2379"}, "", false, ""},
	} {
		c := Config{APIListen: "127.0.0.1:0", DataDir: "x", Store: StoreEtcd}
		c.Etcd.Endpoints, c.Etcd.CertFile, c.Etcd.Insecure = tc.endpoints, tc.cert, tc.insecure
		if tc.cert != "" {
			c.Etcd.KeyFile = "c.key"
		}
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v (insecure %v): %v", tc.endpoints, tc.insecure, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--etcd-insecure")):
			t.Errorf("%v: %v, want %q and the way out named", tc.endpoints, err, tc.want)
		}
	}
}
