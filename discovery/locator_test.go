package discovery

import (
	"strings"
	"testing"
)

func TestLocator(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Locator
		str     string
		wantErr string
	}{
		{in: "jini://example.org", want: Locator{"example.org", 4160}, str: "jini://example.org:4160"},
		{in: "jini://example.org:4161/", want: Locator{"example.org", 4161}, str: "jini://example.org:4161"},
		{in: "JINI://192.0.2.1:80", want: Locator{"192.0.2.1", 80}, str: "jini://192.0.2.1:80"},
		{in: "jini://[2001:db8::1]", want: Locator{"2001:db8::1", 4160}, str: "jini://[2001:db8::1]:4160"},
		{in: "jini://[fe80::1%25eth0]:4170", want: Locator{"fe80::1%eth0", 4170}, str: "jini://[fe80::1%25eth0]:4170"},
		{in: "http://example.org", wantErr: "want jini://host[:port]"},
		{in: "jini:/example.org", wantErr: "want jini://host[:port]"},
		{in: "jini://", wantErr: "empty host"},
		{in: "jini://example.org:0", wantErr: "not a number from 1 to 65535"},
		{in: "jini://example.org:65536", wantErr: "not a number from 1 to 65535"},
		{in: "jini://example.org:", wantErr: "empty port"},
		{in: "jini://example.org:+80", wantErr: "not a number"},
		{in: "jini://example.org/path", wantErr: `unexpected "/path"`},
		{in: "jini://example.org?q", wantErr: `unexpected "?q"`},
		{in: "jini://user@example.org", wantErr: "user part"},
		{in: "jini://2001:db8::1", wantErr: "must be written in brackets"},
		{in: "jini://[192.0.2.1]", wantErr: "not an IPv6 address"},
		{in: "jini://[2001:db8::1", wantErr: "missing ]"},
		{in: "jini://exa mple", wantErr: "not allowed in a host name"},
		{in: "jini://a..b", wantErr: "empty label"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseLocator(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || got.String() != tc.str {
				t.Fatalf("got %+v (%s), want %+v (%s)", got, got, tc.want, tc.str)
			}
		})
	}
	a, _ := ParseLocator("jini://Example.ORG")
	b, _ := ParseLocator("jini://example.org:4160/")
	if !a.Equal(b) {
		t.Fatal("locators differing only in host case and default port should be equal")
	}
}

func FuzzParseLocator(f *testing.F) {
	for _, s := range []string{"jini://example.org", "jini://[2001:db8::1]:4161/", "jini://192.0.2.1:80", "jini://[fe80::1%25eth0]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLocator(s)
		if err != nil {
			return
		}
		back, err := ParseLocator(l.String())
		if err != nil {
			t.Fatalf("%q parsed to %+v whose String %q does not parse: %v", s, l, l.String(), err)
		}
		if back != l {
			t.Fatalf("%q: %+v became %+v", s, l, back)
		}
	})
}
