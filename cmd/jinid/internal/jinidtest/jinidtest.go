// Package jinidtest runs the real jinid binary for the end-to-end,
// conformance and crash suites, as net/http/httptest runs a server: it
// builds the binary once per test process, starts daemons on loopback or
// inside a netlab host, and stops every process it started when the test
// that started it ends, whether it passed or not.
package jinidtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jinid/jinid/internal/rig/apidoc"
	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
	"github.com/jinid/jinid/services/api/client"
)

var built struct {
	sync.Mutex
	dir   string
	paths map[string]string // by package
}

// Parallel has up to n of the package's parallel tests run at once,
// unless the command line says (-test.parallel; go test's default is the
// number of CPUs): for packages whose tests mostly wait on daemons, on
// leases running out, on peers' timeouts. Call it in TestMain, before
// Main.
func Parallel(n int) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// Main runs a package's tests, fails the run if a goroutine a test
// started still runs, or a process a test started from the binaries
// built here (a test that forgot its cleanup: the process would outlive
// the run), and then removes the binaries. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	// No goroutine a test started (a reader of a daemon's output, a
	// listener, a watch) may outlive it either. net/http's default
	// client keeps connections to daemons idle for reuse: they go first.
	http.DefaultClient.CloseIdleConnections()
	if err := goleak.Find(); err != nil && code == 0 {
		fmt.Fprintf(os.Stderr, "FAIL: goroutines still run after the tests: %v\n", err)
		code = 1
	}
	built.Lock()
	defer built.Unlock()
	if built.dir != "" {
		if left := Leftovers(os.Getpid(), built.dir); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: processes started by the tests still run after them (a missing cleanup):\n  %s\n", strings.Join(left, "\n  "))
			for _, l := range left {
				var pid int
				fmt.Sscan(l, &pid)
				syscall.Kill(pid, syscall.SIGKILL)
			}
			code = 1
		}
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// Leftovers lists the running children of process parent whose
// executable lies under dir, as "PID path".
func Leftovers(parent int, dir string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command name, which may hold anything,
		// close with its last ")": state, then the parent's PID.
		rest := stat[bytes.LastIndexByte(stat, ')')+1:]
		f := strings.Fields(string(rest))
		if len(f) < 2 || f[1] != strconv.Itoa(parent) || f[0] == "Z" {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || !strings.HasPrefix(exe, dir+string(filepath.Separator)) {
			continue
		}
		out = append(out, fmt.Sprintf("%d %s", pid, exe))
	}
	return out
}

// Binary builds the static jinid binary once per test process and returns
// its path, or returns JINID_TEST_BIN when set (to measure another build,
// such as an earlier commit's, with the same tests and benchmarks). With
// -short the test is skipped: these are the slow suites.
func Binary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped with -short: runs the jinid binary")
	}
	if bin := os.Getenv("JINID_TEST_BIN"); bin != "" {
		return bin
	}
	return build(t, "github.com/jinid/jinid/cmd/jinid")
}

// FaultBinary builds the jinid binary with a fault injected on purpose
// (the build tag fault_<fault>), once per test process, and
// returns its path: a test shows its checker catching the fault.
func FaultBinary(t testing.TB, fault string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped with -short: runs the jinid binary")
	}
	return buildTagged(t, "github.com/jinid/jinid/cmd/jinid", "fault_"+fault)
}

// FloodTool builds jinidflood, the flood replayer, once per test process
// (without the race detector, whatever the tests run with: it holds
// thousands of connections) and returns its path.
func FloodTool(t testing.TB) string {
	t.Helper()
	return build(t, "github.com/jinid/jinid/cmd/jinid/internal/floodtest/jinidflood")
}

// build builds pkg's command into the process's temporary directory,
// once.
func build(t testing.TB, pkg string) string {
	t.Helper()
	return buildTagged(t, pkg, "")
}

// buildTagged is build with a build tag ("": none).
func buildTagged(t testing.TB, pkg, tag string) string {
	t.Helper()
	built.Lock()
	defer built.Unlock()
	if p := built.paths[pkg+" "+tag]; p != "" {
		return p
	}
	if built.dir == "" {
		dir, err := os.MkdirTemp("", "jinid-test-bin")
		if err != nil {
			t.Fatal(err)
		}
		built.dir, built.paths = dir, map[string]string{}
	}
	bin := filepath.Join(built.dir, filepath.Base(pkg))
	args := []string{"build"}
	if tag != "" {
		bin += "-" + tag
		args = append(args, "-tags", tag)
	}
	args = append(args, "-o", bin)
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	built.paths[pkg+" "+tag] = bin
	return bin
}

// dieWithTest makes the kernel kill cmd if the test process dies first,
// so no daemon outlives a crashed or killed test run.
func dieWithTest(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// Daemon is the jinid binary running as a daemon on loopback.
type Daemon struct {
	// API is the base URL of its network API; Socket, the path of its
	// unix socket (the administrator's: no token).
	API, Socket string
	// Dir is its data directory (admin.token is there).
	Dir string
	Cmd *exec.Cmd

	mu   sync.Mutex
	logs strings.Builder
	// exited is closed once the process has exited and been waited for
	// (by the goroutine reading its log, after the last line); err is
	// then how it ended.
	exited chan struct{}
	err    error
}

// Defaults are the settings the rig's daemons start with, before the
// test's own: a socket of their own, and anonymous callers may register
// (the suites are about the protocols, not about tokens; the access
// tests say --anonymous themselves, which overrides this).
func defaults(dir string) []string {
	return []string{"--api-socket", filepath.Join(dir, "api.sock"), "--anonymous", "client"}
}

// StartDaemon runs jinid daemon on a loopback port with its store in dir,
// multicast off, and waits until it serves. Requests on clients' behalf
// may go to loopback, where the tests' listeners are. A daemon the test
// leaves running is killed when the test ends.
func StartDaemon(t testing.TB, bin, dir string, args ...string) *Daemon {
	t.Helper()
	return StartStrictDaemon(t, bin, dir, append([]string{"--allow-outbound", "127.0.0.0/8"}, args...)...)
}

// StartStrictDaemon is StartDaemon without the allowance of loopback:
// the outbound policy as a LAN's daemon has it, for the tests of what
// it refuses and whom it lets name this host.
func StartStrictDaemon(t testing.TB, bin, dir string, args ...string) *Daemon {
	t.Helper()
	base := append([]string{"daemon", "--api-listen", "127.0.0.1:0", "--data-dir", dir, "--no-multicast", "--discovery-port", "0", "--cluster-listen", "127.0.0.1:0"},
		defaults(dir)...)
	base = append(base, storeArgs(t, nil, dir)...)
	return start(t, exec.Command(bin, append(base, args...)...), dir, filepath.Join(dir, "api.sock"))
}

// StartUserDaemon runs jinid daemon as a user (uid, gid) with only the
// environment env, as StartDaemon does but with the daemon's own default
// socket: where a user's daemon puts it is what is tried. Its socket is
// beside its data (dir), where a user with no runtime directory has it.
func StartUserDaemon(t testing.TB, bin, dir string, uid, gid uint32, env []string, args ...string) *Daemon {
	t.Helper()
	base := []string{"daemon", "--api-listen", "127.0.0.1:0", "--data-dir", dir, "--no-multicast", "--discovery-port", "0", "--cluster-listen", "127.0.0.1:0"}
	cmd := exec.Command(bin, append(base, args...)...)
	cmd.Env = env
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	return start(t, cmd, dir, filepath.Join(dir, "jinid.sock"))
}

func start(t testing.TB, cmd *exec.Cmd, dir, socket string) *Daemon {
	t.Helper()
	dieWithTest(cmd)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &Daemon{Cmd: cmd, Dir: dir, Socket: socket, exited: make(chan struct{})}
	t.Cleanup(d.Kill)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`api=(https?://\S+)`)
		for sc.Scan() {
			d.mu.Lock()
			d.logs.WriteString(sc.Text() + "\n")
			d.mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		// Wait only once the log is read to its end: Wait closes the pipe.
		d.err = cmd.Wait()
		close(d.exited)
	}()
	select {
	case api := <-found:
		d.API = api
	case <-d.exited:
		t.Fatalf("daemon exited before serving (%v):\n%s", d.err, d.Log())
	case <-time.After(20 * time.Second):
		d.Kill()
		t.Fatalf("daemon did not start:\n%s", d.Log())
	}
	return d
}

// FreeAddr is a loopback address with a port free a moment ago, for a
// daemon that must come back at the same address after a kill.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// CLI runs the jinid binary bin with args against the daemon's API and
// returns what it printed (standard output and error); the test fails
// if it fails.
func (d *Daemon) CLI(t testing.TB, bin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, append(args, "--server", d.API)...).CombinedOutput()
	if err != nil {
		t.Fatalf("jinid %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Log is what the daemon has logged so far.
func (d *Daemon) Log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.logs.String()
}

// Kill stops the daemon with SIGKILL (if it still runs) and waits for it.
func (d *Daemon) Kill() {
	select {
	case <-d.exited:
		return
	default:
	}
	d.Cmd.Process.Kill()
	<-d.exited
}

// Stop asks the daemon to stop (SIGTERM) and waits for it to exit
// cleanly.
func (d *Daemon) Stop(t testing.TB) {
	t.Helper()
	d.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		if d.err != nil {
			t.Errorf("daemon exit: %v\n%s", d.err, d.Log())
		}
	case <-time.After(15 * time.Second):
		d.Kill()
		t.Errorf("daemon did not stop within 15 s:\n%s", d.Log())
	}
}

// LabProc is a daemon in a lab host: its process, its data directory
// and its API socket.
type LabProc struct {
	*exec.Cmd
	Dir, Socket string

	started, ended chan struct{}
	mu             sync.Mutex
	logs           strings.Builder
}

// Log is what the daemon has logged so far.
func (p *LabProc) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// Kill SIGKILLs the daemon (no shutdown at all, as a power cut) and waits
// for it to be gone.
func (p *LabProc) Kill() {
	p.Process.Signal(syscall.SIGKILL)
	p.Wait()
}

// AdminToken is the admin token the daemon wrote on its first start.
func (p *LabProc) AdminToken(t testing.TB) string {
	t.Helper()
	return AdminToken(t, p.Dir)
}

// AdminToken reads the admin token a daemon wrote in its data directory
// dir on its first start.
func AdminToken(t testing.TB, dir string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "admin.token"))
	if err != nil {
		t.Fatalf("the daemon's admin token: %v", err)
	}
	return strings.TrimSpace(string(raw))
}

// LabDaemon runs jinid daemon inside lab host h, its API on port 4162 of
// every address there, and waits until it has started. It is stopped
// (SIGTERM) when the test ends.
func LabDaemon(t testing.TB, bin string, h *netlab.Host, args ...string) *LabProc {
	t.Helper()
	p := LabNode(t, bin, h, args...)
	select {
	case <-p.started:
	case <-p.ended:
		t.Fatalf("daemon in %s did not start:\n%s", h.Name, p.Log())
	}
	return p
}

// LabNode runs jinid daemon inside lab host h as LabDaemon does, but
// returns at once: a node of a cluster may wait (a standby) before it
// starts. WaitLog waits for what it says.
func LabNode(t testing.TB, bin string, h *netlab.Host, args ...string) *LabProc {
	t.Helper()
	dir := ""
	for i, a := range args {
		if a == "--data-dir" && i+1 < len(args) {
			dir = args[i+1] // the test's own
		}
	}
	if dir == "" {
		dir = t.TempDir()
	}
	base := append([]string{"daemon", "--api-listen", ":4162", "--data-dir", dir}, defaults(dir)...)
	base = append(base, storeArgs(t, h, dir)...)
	cmd := h.Command(context.Background(), bin, append(base, args...)...)
	dieWithTest(cmd)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &LabProc{Cmd: cmd, Dir: dir, Socket: filepath.Join(dir, "api.sock"), started: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(p.ended)
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			p.mu.Lock()
			p.logs.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if !once && strings.Contains(sc.Text(), "jinid started") {
				once = true
				close(p.started)
			}
		}
	}()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop stops the daemon with SIGTERM. One still running a minute later
// (its stop takes 10 s at most) is stuck: SIGQUIT has Go write every
// goroutine into its log, and the test fails with them.
func (p *LabProc) stop(t testing.TB) {
	// Its log is read to its end (the process gone) before Wait, which
	// would cut the read short.
	p.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.ended:
		p.Wait()
		return
	case <-time.After(time.Minute):
	}
	p.Process.Signal(syscall.SIGQUIT)
	select {
	case <-p.ended:
	case <-time.After(10 * time.Second):
		p.Process.Kill()
		<-p.ended
	}
	p.Wait()
	log := p.Log()
	t.Errorf("the daemon did not stop within a minute of SIGTERM; its log's end, goroutines included:\n%s", log[max(0, len(log)-256<<10):])
}

// WaitLog waits until the daemon has logged a line re matches, and
// returns the match's last submatch (the whole match if it has none).
// It fails the test if the daemon ends first or the wait is too long.
func (p *LabProc) WaitLog(t testing.TB, what string, re *regexp.Regexp) string {
	t.Helper()
	var m []string
	testenv.Until(t, what, func() bool {
		m = re.FindStringSubmatch(p.Log())
		select {
		case <-p.ended:
			if m == nil {
				t.Fatalf("the daemon ended before %s:\n%s", what, p.Log())
			}
		default:
		}
		return m != nil
	})
	return m[len(m)-1]
}

// LabClient is an API client that connects from inside lab host h.
func LabClient(t testing.TB, h *netlab.Host, url string, opts ...client.Option) *client.Client {
	t.Helper()
	tr := &http.Transport{DialContext: DialFrom(h)}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: apidoc.Transport(t, tr)}
	t.Cleanup(tr.CloseIdleConnections) // its connections go with the test
	c, err := client.New(url, hc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// DialFrom dials from inside lab host h.
func DialFrom(h *netlab.Host) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := h.Namespace().Do(func() error {
			var err error
			c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
}

// Client is an API client of url, from this process's namespace. Every
// answer it gets is checked against the API's document (apidoc).
func Client(t testing.TB, url string) *client.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.New(url, &http.Client{Timeout: 30 * time.Second, Transport: apidoc.Transport(t, tr)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Sink records the JSON bodies POSTed to it (events, as a listener
// receives them), in order, with the path each came to.
type Sink struct {
	// URL is the sink's base URL: a listener at URL+"/name" posts to
	// path "/name".
	URL string

	t     testing.TB
	mu    sync.Mutex
	got   []posted
	taken map[string]int // by path: how many Next has returned
	// posted is closed (and replaced) on each post: every waiter wakes.
	posted chan struct{}
}

type posted struct {
	path string
	raw  []byte
	body map[string]any
}

// ListenIn listens on TCP at ip (any port) inside lab host h, until the
// test ends.
func ListenIn(t testing.TB, h *netlab.Host, ip string) net.Listener {
	t.Helper()
	var ln net.Listener
	if err := h.Namespace().Do(func() error {
		var err error
		ln, err = net.Listen("tcp", net.JoinHostPort(ip, "0"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// ServeIn serves handler over HTTP at ip inside lab host h until the
// test ends, and returns its base URL.
func ServeIn(t testing.TB, h *netlab.Host, ip string, handler http.Handler) string {
	t.Helper()
	ln := ListenIn(t, h, ip)
	Serve(t, ln, handler)
	return "http://" + ln.Addr().String()
}

// ServeConns hands each connection accepted on ln to handle, in a
// goroutine of its own, until the test ends; then it closes the listener
// and every connection still open and waits for the handlers, so that
// none outlives the test. A handler need not close its connection.
func ServeConns(t testing.TB, ln net.Listener, handle func(net.Conn)) {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		conns  = map[net.Conn]bool{}
		closed bool
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if closed {
				mu.Unlock()
				c.Close()
				return
			}
			conns[c] = true
			wg.Add(1) // while the accept loop's own count is held
			mu.Unlock()
			go func() {
				defer wg.Done()
				defer func() {
					mu.Lock()
					delete(conns, c)
					mu.Unlock()
					c.Close()
				}()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		closed = true
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
}

// Serve serves handler on ln until the test ends, and then waits for the
// handlers still answering (a slow grantor's), so that none outlives the
// test: net/http's Close does not wait for them.
func Serve(t testing.TB, ln net.Listener, handler http.Handler) {
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		srv.Close()
	})
}

// NewSink serves a sink on ip inside lab host h, or on loopback in this
// process's namespace when h is nil, until the test ends.
func NewSink(t testing.TB, h *netlab.Host, ip string) *Sink {
	t.Helper()
	if ip == "" {
		ip = "127.0.0.1"
	}
	s := &Sink{t: t, taken: map[string]int{}, posted: make(chan struct{})}
	var ln net.Listener
	listen := func() error {
		var err error
		ln, err = net.Listen("tcp", net.JoinHostPort(ip, "0"))
		return err
	}
	var err error
	if h != nil {
		err = h.Namespace().Do(listen)
	} else {
		err = listen()
	}
	if err != nil {
		t.Fatal(err)
	}
	s.URL = "http://" + ln.Addr().String()
	Serve(t, ln, s)
	return s
}

// ServeHTTP records one body. A body cut short is no delivery (the
// daemon gave up on it, stopping, say, and knows it failed): it is not
// recorded.
func (s *Sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		s.t.Errorf("sink got %q at %s: %v", body, r.URL.Path, err)
	}
	s.mu.Lock()
	s.got = append(s.got, posted{path: r.URL.Path, raw: body, body: v})
	close(s.posted)
	s.posted = make(chan struct{})
	s.mu.Unlock()
}

// Events returns the bodies posted to path so far, in order; "" means
// every path.
func (s *Sink) Events(path string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, p := range s.at(path) {
		out = append(out, p.body)
	}
	return out
}

// at returns what came to path; the caller holds mu.
func (s *Sink) at(path string) []posted {
	var out []posted
	for _, p := range s.got {
		if path == "" || p.path == path {
			out = append(out, p)
		}
	}
	return out
}

// Next decodes the next body posted to path that Next has not returned
// yet into v, waiting for it as long as within.
func (s *Sink) Next(t testing.TB, path string, within time.Duration, v any) {
	t.Helper()
	deadline := time.After(within)
	for {
		s.mu.Lock()
		wake := s.posted
		if ps := s.at(path); len(ps) > s.taken[path] {
			p := ps[s.taken[path]]
			s.taken[path]++
			s.mu.Unlock()
			if err := json.Unmarshal(p.raw, v); err != nil {
				t.Fatalf("event at %s: %v", path, err)
			}
			return
		}
		s.mu.Unlock()
		select {
		case <-wake:
		case <-deadline:
			t.Fatalf("no event at %s within %s", path, within)
		}
	}
}

// Pending reports how many bodies posted to path Next has not returned.
func (s *Sink) Pending(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.at(path)) - s.taken[path]
}

// Wait waits until n bodies have come to path and returns them.
func (s *Sink) Wait(t testing.TB, path string, n int) []map[string]any {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		s.mu.Lock()
		wake := s.posted
		s.mu.Unlock()
		if evs := s.Events(path); len(evs) >= n {
			return evs
		}
		select {
		case <-wake:
		case <-deadline:
			t.Fatalf("sink got %d events at %s, want %d", len(s.Events(path)), path, n)
		}
	}
}
