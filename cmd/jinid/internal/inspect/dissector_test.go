package inspect

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jinid/jinid/cmd/jinid/internal/pcaptest"
	"github.com/jinid/jinid/internal/rig/vectors"
)

// jinidFields is what jinid decodes of a capture, as pcaptest.TsharkFields
// gives tshark's: a line per message decoded without error (not Jini ERI
// calls, which the dissector leaves to Wireshark's TCP), sorted.
func jinidFields(t testing.TB, raw []byte) []string {
	t.Helper()
	var ours []string
	err := ReadCapture(bytes.NewReader(raw), NewDecoder(func(r Record) {
		if r.Error != "" || r.Kind == KindJERICall {
			return
		}
		var b strings.Builder
		for i, f := range pcaptest.DissectorFields {
			if i > 0 {
				b.WriteByte('\t')
			}
			b.WriteString(strings.Join(Values(r, f), ","))
		}
		ours = append(ours, b.String())
	}))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ours)
	return ours
}

// For every message jinid decodes, tshark with the Lua dissector shows
// the same kind, version, ServiceIDs, groups and host and port: on the
// scenario of every kind of message (a Reggie's response split out of
// order, a jinid's connecting back to a version 1 requester, hostile
// datagrams).
func TestDissectorAgreesWithJinid(t *testing.T) {
	raw := pcaptest.Scenario(t)
	path := filepath.Join(t.TempDir(), "scenario.pcap")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	ours, theirs := jinidFields(t, raw), pcaptest.TsharkFields(t, Dissector, path)
	if len(ours) < 10 || !slices.Equal(ours, theirs) {
		t.Errorf("jinid decodes\n%s\ntshark with the dissector shows\n%s", strings.Join(ours, "\n"), strings.Join(theirs, "\n"))
	}
}

func TestInstallDissector(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plugins")
	path, err := InstallDissector(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, Dissector) || filepath.Base(path) != "jini.lua" {
		t.Fatalf("%s holds %d bytes", path, len(b))
	}
}

// The dissector's tree names the public group (its name is empty: the
// tree showed "Group: "), while its value stays "" for filters and
// -T fields, as jinid's.
func TestDissectorNamesThePublicGroup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scenario.pcap")
	if err := os.WriteFile(path, pcaptest.Scenario(t), 0o644); err != nil {
		t.Fatal(err)
	}
	tree := pcaptest.Tshark(t, Dissector, path, "-Y", `jini.group == ""`, "-V", "-O", "jini")
	if !strings.Contains(tree, "Group: (public)") || strings.Contains(tree, "Group: \n") {
		t.Errorf("the public group in the dissector's tree:\n%s", tree)
	}
}

// The dissector's info column writes an IPv6 host:port as jinid does, in
// brackets (a version 1 request's host is its source: here an IPv6 one).
func TestDissectorBracketsIPv6(t *testing.T) {
	c := pcaptest.NewCapture(t)
	c.UDP("2001:db8::20", 50000, "ff05::156", vectors.Named("v1.request#0").Bytes())
	path := filepath.Join(t.TempDir(), "v6.pcap")
	if err := os.WriteFile(path, c.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	summary := pcaptest.Tshark(t, Dissector, path, "-Y", "jini")
	if !strings.Contains(summary, "[2001:db8::20]:45678") {
		t.Errorf("no bracketed IPv6 host in the dissector's info:\n%s", summary)
	}
}

// A capture begun mid-exchange holds a lookup service's response without
// its request: jinid took the side it heard for the client's and decoded
// the response as a (bad) request, one unicast response fewer than
// tshark with the dissector shows (TestInspectJERI under load).
func TestDissectorAgreesMidExchange(t *testing.T) {
	c := pcaptest.NewCapture(t)
	cl, sv := "192.0.2.20", "192.0.2.10"
	resp := vectors.Named("v2.unicast.response").Bytes()
	c.TCP(sv, 4160, cl, 40000, false, false, resp[:100])
	c.TCP(sv, 4160, cl, 40000, false, true, resp[100:])
	c.TCP(cl, 40000, sv, 4160, false, true, nil)
	path := filepath.Join(t.TempDir(), "mid.pcap")
	if err := os.WriteFile(path, c.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ours, theirs := jinidFields(t, c.Bytes()), pcaptest.TsharkFields(t, Dissector, path)
	if len(ours) != 1 || !strings.HasPrefix(ours[0], "unicast-response\t") || !slices.Equal(ours, theirs) {
		t.Errorf("jinid decodes\n%s\ntshark with the dissector shows\n%s", strings.Join(ours, "\n"), strings.Join(theirs, "\n"))
	}
}
