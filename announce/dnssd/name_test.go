package dnssd

import (
	"strings"
	"testing"

	"github.com/jinid/jinid/discovery"
)

func TestNodeName(t *testing.T) {
	id := discovery.ServiceID{0xab, 0xcd, 0xef, 0x01, 0x23}
	for _, tc := range []struct{ node, want string }{
		{"node-a", "jinid-abcdef01-node-a"},
		{"Gateway.Lab_2", "jinid-abcdef01-gateway-lab-2"},
		{"gw-", "jinid-abcdef01-gw"},
		{strings.Repeat("x", 80), "jinid-abcdef01-" + strings.Repeat("x", maxName-len("jinid-abcdef01-"))},
	} {
		got := NodeName(id, tc.node)
		if got != tc.want {
			t.Errorf("NodeName(%q) = %q, want %q", tc.node, got, tc.want)
		}
		if err := validName(got); err != nil {
			t.Errorf("NodeName(%q): %v", tc.node, err)
		}
	}
}

func TestAdvertiserRefusesBadName(t *testing.T) {
	for _, name := range []string{"-x", "x-", "a b", "a.b", strings.Repeat("x", maxName+1)} {
		if _, err := NewAdvertiser(AdvertiserConfig{Name: name}); err == nil || !strings.Contains(err.Error(), "mDNS name") {
			t.Errorf("name %q: %v, want refused", name, err)
		}
	}
}
