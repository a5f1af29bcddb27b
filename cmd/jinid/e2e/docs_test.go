package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
	"github.com/jinid/jinid/cmd/jinid/internal/pcaptest"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
)

// Documentation that runs (as CoreDNS's does): every example of the
// README, of docs/*.md and of every command's --help runs as written, on
// a LAN shaped as the docs describe it, and must do what it says (exit
// 0; a transcript, "$ command" and its output, must print that output).
//
// The LAN is 10.0.0.0/24: the gateway gw (10.0.0.1, also gw.example.org)
// runs jinid as its administrator would, with its defaults: the store in
// /var/lib/jinid, the socket /run/jinid/jinid.sock, the config file
// /etc/jinid/jinid.json (the packages' example); another lookup service
// is lookup.example.org (10.0.0.7); a listener host is 10.0.0.5 (jinid
// listen on :9000); an etcd member is 10.0.0.2 (client port 2379), with
// a jinid node holding the default prefix at 10.0.0.3. Those paths are the test's own directories, bound
// over the system's in each command's mount namespace; names resolve
// through each host's own hosts file. Examples run on gw, in a working
// directory holding the files they name (jini.pcap, gw.crt and gw.key,
// admin.token); those that run a daemon of their own or work on a
// stopped daemon's store (jinid store), and the
// transcripts, run on a spare host with no daemon. The shell variables
// the --help examples use ($REG, $SET, $LEASE) hold what their comments
// say. A command that runs until interrupted (a daemon, a listener, a
// watch, a live capture) runs until it has said it is up, at most 10 s,
// and is then interrupted (Ctrl-C): it must stop cleanly, exit 0.
func TestDocsRunAsWritten(t *testing.T) {
	t.Parallel()
	testenv.LookPath(t, "jq", "jq")
	testenv.LookPath(t, "tcpdump", "tcpdump")
	bin := jinidtest.Binary(t)
	lab := netlab.New(t)
	lan := lab.LAN()
	hosts := map[string]netip.Addr{"gw": addr("10.0.0.1"), "gw.example.org": addr("10.0.0.1"), "lookup.example.org": addr("10.0.0.7")}
	machine := func(name, ip string) *netlab.Host {
		h := lab.Host(name)
		h.Attach(lan).ReplaceIPv4(addr(ip))
		h.SetHosts(hosts)
		return h
	}
	gwHost, peer, client, spareHost := machine("gw", "10.0.0.1"), machine("peer", "10.0.0.7"), machine("client", "10.0.0.5"), machine("spare", "10.0.0.9")
	etcJinid(t)
	binDir := t.TempDir()
	for _, name := range []string{"jinid", "jinid-daemon", "jinid-tools"} {
		if err := os.Symlink(bin, filepath.Join(binDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	gw, spare := newBox(t, gwHost, binDir), newBox(t, spareHost, binDir)
	example, err := os.ReadFile("../../../firmware/jinid.example.json")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(gw.etc, "jinid.json"), example, 0o644)

	jinidtest.LabDaemon(t, bin, peer, "--groups", "lab")
	// A deployment on etcd (docs/cluster.md): a member at 10.0.0.2,
	// authenticating its clients by certificate, a node at 10.0.0.3
	// holding the store; etcd's CA and jinid's client certificate in
	// /etc/jinid/etcd/, the site's CA and a node's certificate in
	// /etc/jinid/cluster/, as the docs place them.
	etcd := jinidtest.EtcdClusterOn(t, []*netlab.Host{machine("etcd", "10.0.0.2")}, []netip.Addr{addr("10.0.0.2")})
	site := jinidtest.NewCA(t, "site")
	nodeCert, nodeKey := site.Issue(t, "node")
	for _, b := range []*box{gw, spare} {
		for dst, src := range map[string]string{"etcd/ca.crt": etcd[0].TLS.CA, "etcd/client.crt": etcd[0].TLS.Cert, "etcd/client.key": etcd[0].TLS.Key,
			"cluster/ca.crt": site.File, "cluster/node.crt": nodeCert, "cluster/node.key": nodeKey} {
			copyFile(t, src, filepath.Join(b.etc, dst))
		}
	}
	jinidtest.LabDaemon(t, bin, machine("node", "10.0.0.3"), append(append([]string{"--no-multicast", "--store", "etcd"}, jinidtest.EtcdFlags(etcd)...),
		"--cluster-ca", site.File, "--cluster-cert", nodeCert, "--cluster-key", nodeKey, "--node", "node-3")...)
	listen := client.Command(context.Background(), bin, "listen", "--addr", ":9000")
	if err := listen.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { listen.Process.Kill(); listen.Wait() })
	// The gateway's jinid, as its administrator runs it (snapshots on,
	// for jinid snapshot).
	gw.background(t, "jinid daemon --snapshot-dir /etc/jinid/state --api-host gw")
	token, err := os.ReadFile(filepath.Join(gw.state, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(gw.work, "admin.token"), token, 0o600)

	// What the --help examples' variables hold.
	gw.env = append(gw.env,
		"REG="+gw.jsonField(t, "jinid lds register --groups lab --listener http://10.0.0.5:9000/ -o json", "registration"),
		"SET="+gw.jsonField(t, "jinid renewal create --duration 1h -o json", "set"),
		"LEASE="+gw.jsonField(t, "jinid lookup register --type com.example.Leased --duration 10m -o json", "lease"))

	var all []docExample
	all = append(all, helpExamples(t, bin)...)
	all = append(all, docExamples(t)...)
	lines := 0
	for _, ex := range all {
		lines += len(ex.lines)
	}
	if len(all) < 25 || lines < 60 {
		t.Fatalf("only %d examples of %d lines found: is the parsing right?", len(all), lines)
	}
	t.Logf("%d examples, %d lines", len(all), lines)
	var file *docExample
	for _, ex := range all {
		if ex.file != "" {
			file = &ex // for the example after it
			continue
		}
		box := gw
		if ex.transcript || ex.daemons() {
			box = spare
		}
		t.Run(ex.where, func(t *testing.T) {
			if file != nil {
				// The file the document gives is there for this
				// example (in its host's /etc/jinid), and only for it.
				path := filepath.Join(box.etc, strings.TrimPrefix(file.file, "/etc/jinid/"))
				if err := os.WriteFile(path, []byte(file.content), 0o644); err != nil {
					t.Fatal(err)
				}
				defer os.Remove(path)
			}
			box.run(t, ex)
		})
		file = nil
	}
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

// copyFile copies src to dst, making dst's directory.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

// etcJinid makes /etc/jinid, where the examples' config file is bound
// over, if the machine has none; it is removed again after.
func etcJinid(t *testing.T) {
	if _, err := os.Stat("/etc/jinid"); err == nil {
		return
	}
	if err := os.Mkdir("/etc/jinid", 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove("/etc/jinid") })
}

// A docExample is one example: a --help's, or a code block of a document.
type docExample struct {
	where string
	lines []string // shell lines, continuations joined, comments cut
	// transcript: lines are "$ command" followed by the output it must
	// print (want).
	transcript bool
	want       string
	// file and content: a block that is a file's content, for the
	// examples after it.
	file, content string
}

// daemons says every line runs a daemon of its own.
func (ex docExample) daemons() bool {
	for _, l := range ex.lines {
		// A daemon of its own, or a store only a stopped daemon's may
		// be worked on (jinid store).
		if !daemonLine.MatchString(l) && !storeLine.MatchString(l) {
			return false
		}
	}
	return len(ex.lines) > 0
}

var (
	// A line that runs jinid: its first command, a stage of a pipeline,
	// or a $(...) in an assignment.
	jinidLine  = regexp.MustCompile(`(^|[|(]\s*|^[A-Z_]+=\S*\s+)(\./)?jinid(-daemon|-tools)?(\s|$)`)
	daemonLine = regexp.MustCompile(`((^|\s)(\./)?jinid(-daemon)?|^go run \./cmd/jinid)\s+daemon(\s|$)`)
	storeLine  = regexp.MustCompile(`^jinid\s+store\s`)
	// The README's first command: the daemon from the source tree.
	goRunLine = regexp.MustCompile(`^go run \./cmd/jinid\s`)
	// Commands that run until interrupted.
	untilInterrupted = regexp.MustCompile(`\bdaemon(\s|$)|\blisten\b|\btxn participant\b|--watch\b|--iface\b|^tcpdump\b`)
)

// helpExamples are the Examples: of every command's --help, walking the
// command tree as --help lists it.
func helpExamples(t *testing.T, bin string) []docExample {
	var out []docExample
	var walk func(path []string)
	walk = func(path []string) {
		raw, err := exec.Command(bin, append(path, "--help")...).Output()
		if err != nil {
			t.Fatalf("jinid %v --help: %v", path, err)
		}
		var lines []string
		for _, l := range section(string(raw), "Examples:") {
			lines = append(lines, shellLines(strings.TrimPrefix(l, "  "))...)
		}
		if len(lines) > 0 {
			out = append(out, docExample{where: "jinid " + strings.Join(path, " ") + " --help", lines: lines})
		}
		for _, l := range section(string(raw), "Available Commands:") {
			if name := strings.Fields(l)[0]; name != "help" && name != "completion" {
				walk(append(append([]string{}, path...), name))
			}
		}
	}
	walk(nil)
	return out
}

// section is the lines of a --help section, up to the blank line that
// ends it.
func section(help, title string) []string {
	_, rest, ok := strings.Cut(help, "\n"+title+"\n")
	if !ok {
		return nil
	}
	body, _, _ := strings.Cut(rest, "\n\n")
	return strings.Split(strings.TrimRight(body, "\n"), "\n")
}

// shellLines is the jinid lines of text: continuations joined, comments
// cut, lines that run no jinid (make, systemctl, opkg: what the docs say
// to do around it, not its examples) left out.
func shellLines(text string) []string {
	var out []string
	var cont string
	for l := range strings.Lines(text) {
		l = strings.TrimRight(l, "\n")
		if strings.HasSuffix(l, `\`) {
			cont += strings.TrimSuffix(l, `\`)
			continue
		}
		l = strings.TrimSpace(cont + l)
		cont = ""
		if i := strings.Index(l, "  #"); i >= 0 {
			l = strings.TrimSpace(l[:i])
		}
		if jinidLine.MatchString(l) || goRunLine.MatchString(l) || strings.HasPrefix(l, "tcpdump ") && strings.Contains(l, "| jinid") {
			out = append(out, l)
		}
	}
	return out
}

// docExamples are the code blocks of README.md and docs/*.md.
func docExamples(t *testing.T) []docExample {
	files, _ := filepath.Glob("../../../docs/*.md")
	files = append([]string{"../../../README.md"}, files...)
	var out []docExample
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(f, "../../../")
		blocks := regexp.MustCompile("(?ms)^```([^\n]*)\n(.*?)^```").FindAllStringSubmatch(string(raw), -1)
		for i, b := range blocks {
			info, body := strings.Fields(b[1]), b[2]
			where := fmt.Sprintf("%s block %d", name, i+1)
			switch {
			case len(info) == 2 && strings.HasPrefix(info[1], "/etc/jinid/"):
				out = append(out, docExample{where: where, file: info[1], content: body})
			case strings.HasPrefix(body, "$ "):
				ex := docExample{where: where, transcript: true}
				for l := range strings.Lines(body) {
					if cmd, ok := strings.CutPrefix(l, "$ "); ok {
						ex.lines = append(ex.lines, strings.TrimSpace(cmd))
					} else {
						ex.want += l
					}
				}
				out = append(out, ex)
			case len(info) == 0 || info[0] == "sh":
				if lines := shellLines(body); len(lines) > 0 {
					out = append(out, docExample{where: where, lines: lines})
				}
			}
		}
	}
	return out
}

// A box is a host of the docs' LAN as the examples see it: jinid's
// system directories bound to the test's own, a working directory with
// the files the examples name, PATH leading to the binary under test.
type box struct {
	h                      *netlab.Host
	run0, state, etc, work string
	env                    []string
}

func newBox(t *testing.T, h *netlab.Host, binDir string) *box {
	b := &box{h: h, run0: t.TempDir(), state: t.TempDir(), etc: t.TempDir(), work: t.TempDir()}
	// go run finds Go, its caches and the module where the test's go
	// does.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	goEnv, err := exec.Command(goBin, "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		t.Fatal(err)
	}
	ge := strings.Fields(string(goEnv))
	root, _ := filepath.Abs("../../..")
	b.env = []string{"PATH=" + binDir + ":" + filepath.Dir(goBin) + ":/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + b.work, "LANG=C.UTF-8",
		"GOCACHE=" + ge[0], "GOMODCACHE=" + ge[1], "GOPATH=" + ge[2], "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod", "JD_SRC=" + root,
		"JD_RUN=" + b.run0, "JD_STATE=" + b.state, "JD_ETC=" + b.etc, "JD_WORK=" + b.work}
	if err := os.WriteFile(filepath.Join(b.work, "jini.pcap"), pcaptest.Scenario(t), 0o644); err != nil {
		t.Fatal(err)
	}
	cert, key := selfSigned(t, t.TempDir())
	for from, to := range map[string]string{cert: "gw.crt", key: "gw.key"} {
		raw, _ := os.ReadFile(from)
		os.WriteFile(filepath.Join(b.work, to), raw, 0o600)
	}
	os.Symlink(filepath.Join(binDir, "jinid"), filepath.Join(b.work, "jinid"))
	return b
}

// inBox runs a script in the box's namespace (ip netns exec gives it a
// mount namespace of its own): /run and /var/lib are tmpfs there, with
// /run/jinid, /var/lib/jinid and /etc/jinid the box's directories.
const inBox = `set -e
mount -t tmpfs jinid-run /run && mkdir -p /run/jinid && mount --bind "$JD_RUN" /run/jinid
mount -t tmpfs jinid-lib /var/lib && mkdir -p /var/lib/jinid && mount --bind "$JD_STATE" /var/lib/jinid
mount --bind "$JD_ETC" /etc/jinid
cd "$JD_WORK"
exec sh -ec "$1"`

func (b *box) command(script string) *exec.Cmd {
	cmd := b.h.Command(context.Background(), "sh", "-c", inBox, "sh", script)
	cmd.Env = b.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// jsonField runs a command that prints one JSON object and returns a
// field of it.
func (b *box) jsonField(t *testing.T, line, field string) string {
	t.Helper()
	out, err := b.command(line).Output()
	var v map[string]any
	if err != nil || json.Unmarshal(out, &v) != nil || v[field] == nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	return fmt.Sprint(v[field])
}

// run runs one example's lines in order: runs of ordinary lines as one
// script (so that a variable one sets is there for the next), a line
// that runs until interrupted on its own, a line ending in & in the
// background until the example ends.
func (b *box) run(t *testing.T, ex docExample) {
	if ex.transcript {
		out, _ := b.command(strings.Join(ex.lines, "\n")).CombinedOutput()
		if string(out) != ex.want {
			t.Fatalf("%s printed\n%s\nthe document says\n%s", ex.lines, out, ex.want)
		}
		return
	}
	var script []string
	flush := func() {
		if len(script) == 0 {
			return
		}
		out, err := b.command(strings.Join(script, "\n")).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(script, "\n"), err, out)
		}
		t.Logf("%s\n%s", strings.Join(script, "\n"), out)
		script = nil
	}
	for _, l := range ex.lines {
		if goRunLine.MatchString(l) {
			l = `cd "$JD_SRC" && ` + l // as the README says: from the source tree
		}
		switch {
		case strings.HasSuffix(l, "&"):
			flush()
			b.background(t, strings.TrimSpace(strings.TrimSuffix(l, "&")))
		case untilInterrupted.MatchString(l):
			flush()
			b.interrupt(t, b.start(t, l))
		default:
			script = append(script, l)
		}
	}
	flush()
}

// proc is a command that runs until interrupted.
type proc struct {
	line string
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	up   chan struct{}
	done chan error
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// start runs line until it says it is up (a daemon, "jinid started";
// anything else, its first line), at most 10 s: what runs until
// interrupted may say nothing (a capture of a quiet link).
func (b *box) start(t *testing.T, line string) *proc {
	t.Helper()
	// The shell waits for the line through Ctrl-C, and says how it ended.
	p := &proc{line: line, cmd: b.command("trap true INT\n" + line), up: make(chan struct{}), done: make(chan error, 1)}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) })
	// (The README's go run line has been given its cd first: a daemon
	// all the same, given the minutes a cold build takes, not 10 s.)
	daemon := daemonLine.MatchString(strings.TrimPrefix(line, `cd "$JD_SRC" && `))
	// Up: a daemon once it says it started; jinid inspect (at the end of
	// a pipeline, after a capture that speaks first) once it says what
	// it reads, its Ctrl-C handled from then on; anything else at its
	// first line.
	inspecting := strings.Contains(line, "jinid inspect")
	up := func(text string) bool {
		switch {
		case daemon:
			return strings.Contains(text, "jinid started")
		case inspecting:
			return strings.HasPrefix(text, "Reading ") || strings.HasPrefix(text, "Capturing on ")
		}
		return true
	}
	go func() {
		sc := bufio.NewScanner(r)
		once := sync.OnceFunc(func() { close(p.up) })
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if up(sc.Text()) {
				once()
			}
		}
		p.done <- p.cmd.Wait()
	}()
	// A daemon always says it has started (go run builds it first,
	// which may take minutes on a cold cache); anything else may say
	// nothing, and is given 10 s.
	bound := 10 * time.Second
	if daemon {
		bound = 5 * time.Minute
	}
	select {
	case <-p.up:
	case err := <-p.done:
		t.Fatalf("%s ended before it was up: %v\n%s", line, err, p.output())
	case <-time.After(bound):
		if daemon {
			t.Fatalf("%s did not start within %s\n%s", line, bound, p.output())
		}
	}
	return p
}

// interrupt sends Ctrl-C and wants a clean stop, exit 0.
func (b *box) interrupt(t *testing.T, p *proc) {
	t.Helper()
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
	select {
	case err := <-p.done:
		// go run exits 1 once interrupted, whatever the program did
		// (the go command's own rule): the daemon it ran says it stopped.
		stopped := goRunLine.MatchString(strings.TrimPrefix(p.line, `cd "$JD_SRC" && `)) && strings.Contains(p.output(), `msg="jinid stopped"`)
		if err != nil && !stopped {
			t.Fatalf("%s, interrupted: %v\n%s", p.line, err, p.output())
		}
		t.Logf("%s (until Ctrl-C)\n%s", p.line, p.output())
	case <-time.After(20 * time.Second):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("%s did not stop within 20 s of Ctrl-C\n%s", p.line, p.output())
	}
}

// background runs line until the (sub)test ends, then interrupts it.
func (b *box) background(t *testing.T, line string) {
	t.Helper()
	p := b.start(t, line)
	t.Cleanup(func() { b.interrupt(t, p) })
}
