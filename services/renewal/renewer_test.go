package renewal

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/internal/http1"
	"github.com/jinid/jinid/services/apitypes"
	"github.com/jinid/jinid/services/lease"
	"github.com/jinid/jinid/services/outbound"
)

// What a grantor answered reaches the failure events as it said it, code
// and message, when it answered as the API does (LR.2: the event carries
// the exception the last attempt ended with), bounded and printable; any
// other answer (an HTML page, another service's banner) is a category,
// with none of its bytes.
func TestGrantorAnswers(t *testing.T) {
	long := strings.Repeat("ab", 300)
	for _, c := range []struct {
		name     string
		status   int
		body     string
		code     apitypes.Code // of each lease's result ("" : the call failed)
		message  string        // that result's message, or what the call's error must not contain
		retry    bool
		category apitypes.Code // the call's failure, as the service tells it
	}{
		{"per lease, coded", 200, `{"results":[{"error":{"code":"UnknownLease","message":"lease 7 was cancelled by its owner"}}]}`,
			apitypes.UnknownLease, "lease 7 was cancelled by its owner", false, ""},
		{"per lease, denied", 200, `{"results":[{"error":{"code":"LeaseDenied","message":"over the quota of 10"}}]}`,
			apitypes.LeaseDenied, "over the quota of 10", false, ""},
		{"the whole call refused, coded", 404, `{"error":{"code":"UnknownLease","message":"no lease here"}}`,
			apitypes.UnknownLease, "no lease here", false, ""},
		{"a coded 503: try again, the grantor's words", 503, `{"error":{"code":"Internal","message":"transient failure #2"}}`,
			apitypes.Internal, "transient failure #2", true, ""},
		{"a coded 503 whose code says the lease is gone: still a try again", 503, `{"error":{"code":"UnknownLease","message":"restarting"}}`,
			apitypes.UnknownLease, "restarting", true, ""},
		{"a message made printable and bounded", 200, `{"results":[{"error":{"code":"LeaseDenied","message":"bad\u0000\u001b[31mred\u202e\n` + long + `"}}]}`,
			apitypes.LeaseDenied, "bad [31mred " + long[:maxGrantorMessage-len("bad [31mred ")], false, ""},
		{"a code no grantor answers: a bad answer, its words not carried", 200, `{"results":[{"error":{"code":"Teapot","message":"I am a teapot"}}]}`,
			apitypes.BadAnswer, "the grantor did not answer as the protocol wants", false, ""},
		{"an empty message: this service's words", 200, `{"results":[{"error":{"code":"UnknownLease","message":""}}]}`,
			apitypes.UnknownLease, grantorMessages[apitypes.UnknownLease], false, ""},
		{"an HTML error page", 503, `<html><body>Service Unavailable: backend pool-7 down</body></html>`,
			"", "pool-7", false, apitypes.BadAnswer},
		{"an HTML 404: no renewal endpoint", 404, `<html>Not Found /secret-path</html>`,
			apitypes.NoSuchObject, "the grantor has no lease renewal endpoint", false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(c.body, "{") {
					w.Header().Set("Content-Type", "application/json")
				}
				w.WriteHeader(c.status)
				w.Write([]byte(c.body))
			}))
			defer srv.Close()
			rs, err := loopbackRenewer().RenewAll(context.Background(), srv.URL, []lease.Renewal{{ID: "7", Duration: 3000}})
			if c.code == "" {
				if err == nil {
					t.Fatalf("results %+v, want the call failed", rs)
				}
				if f := outbound.Fault(err); f.Code != c.category || strings.Contains(f.Message, c.message) {
					t.Fatalf("told as %s %q, want %s without the grantor's bytes", f.Code, f.Message, c.category)
				}
				return
			}
			if err != nil || len(rs) != 1 || rs[0].Err == nil {
				t.Fatalf("results %+v, %v", rs, err)
			}
			if e := rs[0].Err; e.Code != c.code || e.Message != c.message || rs[0].Retry != c.retry {
				t.Fatalf("result %s %q (retry %v), want %s %q (retry %v)", e.Code, e.Message, rs[0].Retry, c.code, c.message, c.retry)
			}
		})
	}
}

// A grantor address where another service answers (an SSH server's
// banner) is a bad answer, with none of its bytes.
func TestGrantorIsNotHTTP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n"))
			c.Close()
		}
	}()
	_, err = loopbackRenewer().RenewAll(context.Background(), "http://"+ln.Addr().String(), []lease.Renewal{{ID: "7", Duration: 3000}})
	if err == nil {
		t.Fatal("an SSH server renewed a lease")
	}
	if f := outbound.Fault(err); f.Code != apitypes.BadAnswer || strings.Contains(f.Message, "SSH") || strings.Contains(f.Message, "OpenSSH") {
		t.Fatalf("told as %s %q, want BadAnswer without the banner", f.Code, f.Message)
	}
}

// loopbackRenewer is the daemon's renewer, its outbound client let to
// reach the test's grantors on loopback.
func loopbackRenewer() HTTPRenewer {
	p := outbound.NewPolicy(outbound.PolicyConfig{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	return HTTPRenewer{Client: outbound.New(outbound.Config{Policy: p, Timeout: 10 * time.Second})}
}

// A grantor answering 143 MiB is read no further than outbound's bound,
// and the renewal fails as a bad answer.
func TestGrantorAnswersTooMuch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"results":[{"id":"7","error":{"code":"Internal","message":"`))
		chunk := []byte(strings.Repeat("x", 64<<10))
		for range 143 << 4 { // 143 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	_, err := loopbackRenewer().RenewAll(context.Background(), srv.URL, []lease.Renewal{{ID: "7", Duration: 3000}})
	if !errors.Is(err, http1.ErrBodyTooLarge) {
		t.Fatalf("a 143 MiB answer: %v, want ErrBodyTooLarge", err)
	}
	if f := outbound.Fault(err); f.Code != apitypes.BadAnswer {
		t.Fatalf("told as %s, want BadAnswer", f.Code)
	}
}
