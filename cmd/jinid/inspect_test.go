//go:build !jinid_omit_tools

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jinid/jinid/cmd/jinid/internal/inspect"
	"github.com/jinid/jinid/cmd/jinid/internal/pcaptest"
)

// inspect --pcap prints exactly what the inspect package's golden files
// hold for the same capture.
func TestInspectPcap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scenario.pcap")
	if err := os.WriteFile(path, pcaptest.Scenario(t), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		golden string
	}{
		{[]string{"inspect", "--pcap", path}, "capture.txt"},
		{[]string{"inspect", "--pcap", path, "--json"}, "capture.jsonl"},
		{[]string{"inspect", "--pcap", path, "-o", "parsable"}, "../../../testdata/output/inspect.parsable"},
		{[]string{"inspect", "--pcap", path, "-o", "yaml"}, "../../../testdata/output/inspect.yaml"},
	} {
		out, _, err := run(t, nil, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("internal", "inspect", "testdata", tc.golden)
		if *update && strings.HasPrefix(tc.golden, "../") {
			os.WriteFile(golden, []byte(out), 0o644)
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Errorf("%v printed:\n%s\nwant:\n%s", tc.args, out, want)
		}
	}
	// Standard input works the same.
	out, _, err := run(t, bytes.NewReader(pcaptest.Scenario(t)), "inspect", "--pcap", "-")
	if err != nil || !strings.Contains(out, "multicast-announcement v2 seq=42") {
		t.Fatalf("stdin: %v\n%s", err, out)
	}
}

// -Y selects lines, -T fields prints chosen fields, the standard error
// has the banner and the summary; usage errors (a bad filter, an
// unknown field, --duration on a file) exit 2 naming what was wrong.
func TestInspectFiltersAndFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scenario.pcap")
	if err := os.WriteFile(path, pcaptest.Scenario(t), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run(t, nil, "inspect", "--pcap", path, "-Y", `kind == multicast-announcement && version == 2 && group == "lab.example"`)
	if err != nil || strings.Count(out, "\n") != 2 || strings.Count(out, "multicast-announcement v2") != 2 {
		t.Fatalf("-Y: %v\n%s", err, out)
	}
	for _, want := range []string{`^Reading ` + regexp.QuoteMeta(path) + `\n`, `\n27 packets: 11 discovery messages decoded, 6 malformed, 0 TCP exchanges incomplete\n`,
		`\n  multicast-announcement v2 +2\n`, `\n  malformed: multicast-announcement: malformed discovery packet +2\n`} {
		if !regexp.MustCompile(want).MatchString(stderr) {
			t.Errorf("standard error lacks %q:\n%s", want, stderr)
		}
	}
	out, _, err = run(t, nil, "inspect", "--pcap", path, "-q", "-T", "fields", "-e", "frame", "-e", "kind", "-e", "lookup", "-e", "group",
		"-Y", "kind == unicast-response && !error")
	want := "13\tunicast-response\t192.0.2.10:4160\t,lab.example\n20\tunicast-response\t192.0.2.30:?\t,lab\n"
	if err != nil || out != want {
		t.Fatalf("-T fields: %v\n%q\nwant\n%q", err, out, want)
	}
	// A capture filter on a file: only what it passes is read, numbered
	// as the file numbers it (as tshark numbers frames whatever it shows;
	// it was 3 and 4, numbered among those passed).
	out, _, err = run(t, nil, "inspect", "--pcap", path, "-q", "-f", "tcp and port 40000", "-T", "fields", "-e", "frame", "-e", "kind")
	if want := "12\tunicast-request\n13\tunicast-response\n"; err != nil || out != want {
		t.Fatalf("-f: %v\n%q\nwant %q", err, out, want)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-f", "udp and arp"}, `"arp" is not in jinid's capture filter syntax`},
		{[]string{"-Y", "kind == x && grup == y"}, `unknown field "grup"`},
		{[]string{"-T", "fields"}, "give at least one -e"},
		{[]string{"-T", "fields", "-e", "colour"}, `-e "colour": not a field`},
		{[]string{"-e", "kind"}, "give -T fields"},
		{[]string{"--duration", "1s"}, "--duration applies to a live capture"},
		{[]string{"-t", "x"}, `-t "x"`},
	} {
		_, stderr, err := run(t, nil, append([]string{"inspect", "--pcap", path}, c.args...)...)
		if err == nil || exitCode(err) != exitUsage || !strings.Contains(stderr+err.Error(), c.want) {
			t.Errorf("%v: exit %d, %v %s; want 2 saying %q", c.args, exitCode(err), err, stderr, c.want)
		}
	}
}

// -z: statistics per lookup service and per requester; with -q, alone.
func TestInspectStatistics(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scenario.pcap")
	if err := os.WriteFile(path, pcaptest.Scenario(t), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, nil, "inspect", "--pcap", path, "-q", "-z", "lookup", "-z", "requester")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`(?m)^=== Lookup services ===\nSERVICE ID +ADDRESS +ANNOUNCEMENTS +INTERVAL +VERSIONS +GROUPS +RESPONSES\n`,
		`(?m)^01234567-89ab-cdef-fedc-ba9876543210 +192\.0\.2\.10:4160,192\.0\.2\.30:\? +3 +3ms +v1,v2 .* +1\n`,
		`(?m)^192\.0\.2\.20 +2 +4 +2 +v1,v2 `,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "multicast-announcement v1") {
		t.Errorf("-q -z printed the lines too:\n%s", out)
	}
	if _, _, err := run(t, nil, "inspect", "--pcap", path, "-z", "colour"); err == nil || exitCode(err) != exitUsage {
		t.Errorf("-z colour: %v", err)
	}
}

// A packet's strings are shown, never sent: a group with a newline and
// an escape sequence forges no line of -T fields output (meant for
// scripts), nor of the text lines.
func TestInspectEscapesControls(t *testing.T) {
	r := inspect.Record{Kind: "multicast-announcement", Version: 2,
		Fields: &inspect.AnnouncementFields{Host: "10.0.0.1\r", Port: 4160, ServiceID: "id", Groups: []string{"lab\nforged\tline", "\x1b]0;t\x07"}}}
	var b bytes.Buffer
	if err := writeFields(&b, r, []string{"group", "host"}); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Count(out, "\n") != 1 || strings.Count(out, "\t") != 1 || strings.ContainsAny(out, "\r\x1b\x07") {
		t.Errorf("-T fields sends controls: %q", out)
	}
	b.Reset()
	if err := inspect.WriteText(&b, r, inspect.TimeRelative); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Count(out, "\n") != 1 || strings.ContainsAny(out, "\r\x1b\x07") {
		t.Errorf("the text line sends controls: %q", out)
	}
}

// A capture file cut short, pcap or pcapng, is an error naming where it
// was cut, exit 1, after the frames before the cut are printed (a cut
// pcapng used to end as a clean end, exit 0).
func TestInspectTruncatedCapture(t *testing.T) {
	pcap := pcaptest.Scenario(t)
	ng := pcaptest.Pcapng(t, pcap)
	for name, file := range map[string][]byte{"pcap": pcap[:len(pcap)-7], "pcapng": ng[:len(ng)-7]} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cut."+name)
			if err := os.WriteFile(path, file, 0o644); err != nil {
				t.Fatal(err)
			}
			out, stderr, err := run(t, nil, "inspect", "--pcap", path)
			if err == nil || exitCode(err) != exitFailure || !strings.Contains(stderr+err.Error(), "cut short") {
				t.Errorf("exit %d, %v %s; want 1 saying the file is cut short", exitCode(err), err, stderr)
			}
			if !strings.Contains(out, "multicast-announcement") {
				t.Errorf("the frames before the cut not printed:\n%s", out)
			}
		})
	}
}
