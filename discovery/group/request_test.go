package group

import (
	"slices"
	"strings"
	"testing"

	"github.com/jinid/jinid/discovery"
)

// A group too long for any packet (issue 15, item 3) is left out of the
// requests; every other group is still asked for, and a request whose
// every group is left out is not sent at all (an empty list would ask
// every group).
func TestRequestPacketsLeaveOutWhatCannotFit(t *testing.T) {
	long := strings.Repeat("x", 600)
	for _, v := range []int{discovery.ProtocolV1, discovery.ProtocolV2} {
		for _, c := range []struct {
			name        string
			groups      []string
			want        []string // groups asked for; nil: no packet
			wantDropped []string
		}{
			{"fits", []string{"lab", "ops"}, []string{"lab", "ops"}, nil},
			{"one too long beside two", []string{"lab", long, "ops"}, []string{"lab", "ops"}, []string{long}},
			{"only one, too long", []string{long}, nil, []string{long}},
			{"any group", []string{}, []string{}, nil},
		} {
			r := discovery.Request{Version: v, Host: "198.18.0.1", Port: 4160, Groups: c.groups, Known: []discovery.ServiceID{{1}}}
			packets, dropped, err := requestPackets(r)
			if err != nil {
				t.Fatalf("v%d %s: %v", v, c.name, err)
			}
			if !slices.Equal(dropped, c.wantDropped) {
				t.Errorf("v%d %s: dropped %d groups, want %d", v, c.name, len(dropped), len(c.wantDropped))
			}
			if c.want == nil {
				if len(packets) != 0 {
					t.Errorf("v%d %s: %d packets, want none", v, c.name, len(packets))
				}
				continue
			}
			var asked []string
			for _, p := range packets {
				got, err := discovery.DecodeRequest(p)
				if err != nil {
					t.Fatalf("v%d %s: %v", v, c.name, err)
				}
				asked = append(asked, got.Groups...)
			}
			if len(packets) == 0 || !slices.Equal(asked, c.want) && !(len(asked) == 0 && len(c.want) == 0) {
				t.Errorf("v%d %s: %d packets asking %q, want %q", v, c.name, len(packets), asked, c.want)
			}
		}
	}
}
