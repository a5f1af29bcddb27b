package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStartServeShutdown(t *testing.T) {
	d, err := New(Config{APIListen: "127.0.0.1:0", DataDir: t.TempDir(), NoMulticast: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + d.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	client.CloseIdleConnections()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"ok"`) {
		t.Fatalf("healthz: %d %s", resp.StatusCode, body)
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := d.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct{ listen, want string }{
		{"4162", "want host:port"},
		{":http", `port "http" is not a number`},
		{":70000", `port "70000" is not a number`},
		{"localhost:4162", `host "localhost" is not an IP address`},
	} {
		_, err := New(Config{APIListen: tc.listen, DataDir: "x"}, slog.New(slog.DiscardHandler))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one saying %q", tc.listen, err, tc.want)
		}
	}
}

func TestStartBindError(t *testing.T) {
	a, _ := New(Config{APIListen: "127.0.0.1:0", DataDir: t.TempDir(), NoMulticast: true}, slog.New(slog.DiscardHandler))
	if err := a.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown(context.Background())
	b, _ := New(Config{APIListen: a.Addr().String(), DataDir: t.TempDir(), NoMulticast: true}, slog.New(slog.DiscardHandler))
	if err := b.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "listening for the API on") {
		t.Fatalf("second bind: %v", err)
	}
}

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
