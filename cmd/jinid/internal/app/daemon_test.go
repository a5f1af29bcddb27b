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
