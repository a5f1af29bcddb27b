package inspect

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/gopacket/pcapgo"
	"golang.org/x/net/bpf"

	"github.com/jinid/jinid/cmd/jinid/internal/pcaptest"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// filterCapture is packets of both families and transports, discovery
// and not, for the capture filter's tests.
func filterCapture(t *testing.T) []byte {
	c := pcaptest.NewCapture(t)
	for _, h := range []struct{ a, b string }{{"192.0.2.10", "224.0.1.84"}, {"198.51.100.7", "192.0.2.10"}, {"2001:db8::10", "ff05::155"}, {"2001:db8:1::5", "2001:db8::10"}} {
		c.UDP(h.a, 4160, h.b, []byte("x"))
		c.UDPTo(h.a, 53, h.b, 5353, []byte("y"))
		c.TCP(h.a, 40000, h.b, 4160, true, false, nil)
		c.TCP(h.b, 4160, h.a, 40000, false, false, []byte("z"))
		c.TCP(h.a, 41000, h.b, 80, false, false, []byte("w"))
	}
	return slices.Clone(c.Bytes())
}

// The capture filters select what tcpdump (libpcap, the oracle) selects
// with the same expression, packet for packet.
func TestCaptureFilterMatchesTcpdump(t *testing.T) {
	testenv.LookPath(t, "tcpdump", "tcpdump")
	raw := filterCapture(t)
	path := filepath.Join(t.TempDir(), "f.pcap")
	os.WriteFile(path, raw, 0o644)
	for _, expr := range []string{
		"udp", "tcp", "ip", "ip6", "port 4160", "src port 4160", "dst port 80",
		"host 192.0.2.10", "src host 192.0.2.10", "dst host 2001:db8::10", "host 2001:db8:1::5",
		"net 192.0.2.0/24", "net 2001:db8::/32", "src net 2001:db8:1::/48", "net 0.0.0.0/0",
		"udp and port 4160", "tcp or udp", "not port 4160", "!(udp && ip6)",
		"host 192.0.2.10 and (port 53 or port 80)", "ip6 and not src net 2001:db8::/48 || dst port 5353",
	} {
		prog, err := CompileCaptureFilter(expr, LinkEthernet)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatalf("%s: %v\n%v", expr, err, prog)
		}
		r, _ := pcapgo.NewReader(bytes.NewReader(raw))
		var ours []string
		for i := 1; ; i++ {
			data, ci, err := r.ReadPacketData()
			if err != nil {
				break
			}
			if n, err := vm.Run(data); err != nil {
				t.Fatalf("%s: frame %d: %v", expr, i, err)
			} else if n > 0 {
				ours = append(ours, ci.Timestamp.UTC().Format("15:04:05.000000"))
			}
		}
		out, err := exec.Command("tcpdump", "-n", "-tt", "-r", path, expr).Output()
		if err != nil {
			t.Fatalf("tcpdump %s: %v", expr, err)
		}
		var theirs []string
		for line := range strings.Lines(string(out)) {
			// -tt prints seconds.micro since the epoch: the capture's are
			// on one day, compared by their time of day.
			f := strings.Fields(line)
			theirs = append(theirs, f[0])
		}
		want := make([]string, len(theirs))
		for i, s := range theirs {
			want[i] = epochToClock(t, s)
		}
		if !slices.Equal(ours, want) {
			t.Errorf("%s: jinid keeps %v, tcpdump %v", expr, ours, want)
		}
	}
}

func epochToClock(t *testing.T, s string) string {
	t.Helper()
	sec, micro, _ := strings.Cut(s, ".")
	var n int64
	for _, c := range sec {
		n = n*10 + int64(c-'0')
	}
	n %= 86400
	return twoDigits(n/3600) + ":" + twoDigits(n/60%60) + ":" + twoDigits(n%60) + "." + micro
}

func twoDigits(n int64) string { return string([]byte{byte('0' + n/10), byte('0' + n%10)}) }

func TestCaptureFilterErrors(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{"arp", `"arp" is not in jinid's capture filter syntax`},
		{"udp and portrange 1-2", `"portrange" is not in`},
		{"host gw.example.org", `want an IPv4 or IPv6 address (jinid resolves no names)`},
		{"net 10.0.0.1/8", "with its prefix length"},
		{"port 70000", "from 0 to 65535"},
		{"src udp", "want host, net or port after src"},
		{"(udp", "a ( without its )"},
		{"udp tcp", `unexpected "tcp"`},
		{"", "the filter ends"},
	} {
		_, err := CompileCaptureFilter(c.expr, LinkEthernet)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one saying %q", c.expr, err, c.want)
		}
	}
	if _, err := CompileCaptureFilter("port 4160", LinkCooked); err != nil {
		t.Fatal(err)
	}
}

func FuzzCaptureFilter(f *testing.F) {
	f.Add("host 192.0.2.10 and (port 53 or not udp)")
	f.Fuzz(func(t *testing.T, expr string) {
		if prog, err := CompileCaptureFilter(expr, LinkEthernet); err == nil {
			if _, err := bpf.NewVM(prog); err != nil {
				t.Fatalf("%q compiles to a program the VM refuses: %v", expr, err)
			}
		}
	})
}
