// Package riverpeer runs the real Java peer in tests: river-peer.jar,
// classes compiled from the public JGDMS repository (the Apache River
// lineage; Apache License 2.0, see LICENSE and NOTICE here) with small
// harness programs (their sources are in shared/river/src beside this
// project, which also documents every program). Tests use it the way
// pion/mdns tests against avahi: the real peer, on a netlab LAN.
//
// The jar and Reggie's configuration are embedded, so a clone runs the
// tests by itself; they need a Java 17 runtime (Debian's
// openjdk-17-jre-headless). Without one a test skips with one line, and
// fails instead when CI=true.
package riverpeer

import (
	"bufio"
	"context"
	_ "embed"
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

	"github.com/jinid/jinid/internal/rig/netlab"
	"github.com/jinid/jinid/internal/rig/testenv"
)

//go:embed river-peer.jar
var jar []byte

//go:embed reggie.config
var reggieConfig []byte

// The helper services' configurations (ServiceMain), by service name.
var (
	//go:embed norm.config
	normConfig []byte
	//go:embed mercury.config
	mercuryConfig []byte
	//go:embed fiddler.config
	fiddlerConfig []byte
	//go:embed mahalo.config
	mahaloConfig []byte
)

//go:embed src/JinidPeer.java
var harnessSource []byte

// Java returns the path of the java command. Without one the test is
// skipped, or failed when CI=true (CI installs it).
func Java(t testing.TB) string {
	t.Helper()
	return testenv.LookPath(t, "java", "openjdk-17-jre-headless")
}

var files struct {
	sync.Mutex
	dir     string
	harness string // compiled JinidPeer, "" until first asked for
}

// classpath is the class path of a program: the jar's, and for
// JinidPeer (src/JinidPeer.java, jinid's own test programs) its classes,
// compiled on first use. Compiling needs javac (a JDK): without one the
// test is skipped, or failed when CI=true.
func classpath(t testing.TB, class string) string {
	t.Helper()
	jarPath, _ := paths(t)
	if class != "JinidPeer" {
		return jarPath
	}
	javac := testenv.LookPath(t, "javac", "openjdk-17-jdk-headless")
	files.Lock()
	defer files.Unlock()
	if files.harness == "" {
		dir := filepath.Join(files.dir, "harness")
		src := filepath.Join(files.dir, "JinidPeer.java")
		if err := os.WriteFile(src, harnessSource, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(javac, "-nowarn", "-cp", jarPath, "-d", dir, src).CombinedOutput()
		if err != nil {
			t.Fatalf("compiling JinidPeer.java: %v\n%s", err, out)
		}
		files.harness = dir
	}
	return files.harness + string(os.PathListSeparator) + jarPath
}

// paths writes the jar and Reggie's configuration out once per process
// and returns where. The files stay until the process ends (tests of one
// binary share them).
func paths(t testing.TB) (jarPath, configPath string) {
	t.Helper()
	files.Lock()
	defer files.Unlock()
	if files.dir == "" {
		dir, err := os.MkdirTemp("", "jinid-riverpeer")
		if err != nil {
			t.Fatal(err)
		}
		for name, b := range map[string][]byte{"river-peer.jar": jar, "reggie.config": reggieConfig,
			"norm.config": normConfig, "mercury.config": mercuryConfig, "fiddler.config": fiddlerConfig, "mahalo.config": mahaloConfig} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		files.dir = dir
	}
	return filepath.Join(files.dir, "river-peer.jar"), filepath.Join(files.dir, "reggie.config")
}

// Reggie is a running Java lookup service.
type Reggie struct {
	ServiceID string // as Java prints a ServiceID (a UUID)
	Locator   string // jini://host:port/
	cmd       *exec.Cmd
	exited    chan struct{}
}

var reggieLine = regexp.MustCompile(`^reggie serviceID=(\S+) locator=(\S+)`)

// StartReggie runs a Java lookup service (Reggie) in lab host h, at
// address addr, member of the groups "" and "lab", announcing every 4 s
// unless an override says otherwise. overrides are Reggie configuration
// entries, such as "multicastAnnouncementInterval=1000L". It returns once
// Reggie serves; the test's end kills it.
func StartReggie(t testing.TB, h *netlab.Host, addr netip.Addr, overrides ...string) *Reggie {
	t.Helper()
	return startReggie(t, h, addr, nil, overrides)
}

// StartPersistentReggie is StartReggie for the persistent Reggie: every
// change written to a log in dir and forced to disk before the call
// returns, as jinid does; the fair peer when timing a durable lookup
// service.
func StartPersistentReggie(t testing.TB, h *netlab.Host, addr netip.Addr, dir string, overrides ...string) *Reggie {
	t.Helper()
	return startReggie(t, h, addr, []string{"-Dreggie.persistent=" + dir}, overrides)
}

func startReggie(t testing.TB, h *netlab.Host, addr netip.Addr, props, overrides []string) *Reggie {
	t.Helper()
	java := Java(t)
	jarPath, config := paths(t)
	args := append(append(append([]string{"-Dreggie.host=" + addr.String()}, props...), "-cp", jarPath, "ReggieMain", config), overrides...)
	cmd := h.Command(context.Background(), java, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting Reggie: %v", err)
	}
	r := &Reggie{cmd: cmd, exited: make(chan struct{})}
	t.Cleanup(r.Kill)
	started := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := reggieLine.FindStringSubmatch(sc.Text()); m != nil {
				started <- m
			}
		}
		cmd.Wait()
		close(r.exited)
	}()
	select {
	case m := <-started:
		r.ServiceID, r.Locator = m[1], m[2]
	case <-r.exited:
		t.Fatalf("Reggie exited before serving:\n%s", stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("Reggie did not start within 60 s:\n%s", stderr.String())
	}
	return r
}

// Kill stops Reggie at once (SIGKILL: no last announcement) and waits
// for it.
func (r *Reggie) Kill() {
	select {
	case <-r.exited:
		return
	default:
	}
	r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.exited
}

// String names it for test messages.
// Pid is the Java process's (for its CPU time and memory).
func (r *Reggie) Pid() int { return r.cmd.Process.Pid }

func (r *Reggie) String() string { return fmt.Sprintf("Reggie %s at %s", r.ServiceID, r.Locator) }

// Service is a running River helper service (ServiceMain).
type Service struct {
	*Program
	ServiceID string // as Java prints a ServiceID (a UUID)
	Endpoint  string // host:port of its Jini ERI endpoint
}

var serviceLine = regexp.MustCompile(`^(\w+) serviceID=(\S+) host=\S+ persistent=\S+ endpoint=(\S+)`)

// StartService runs one of the River helper services (name: norm,
// mercury, fiddler or mahalo) in lab host h at address addr: it finds
// the lookup services of the groups "" and "lab" by multicast and
// registers there. props are Java system properties
// ("-Dservice.persistent=DIR"), overrides configuration entries. It
// returns once the service serves; the test's end kills it.
func StartService(t testing.TB, h *netlab.Host, addr netip.Addr, name string, props []string, overrides ...string) *Service {
	t.Helper()
	jarPath, _ := paths(t)
	config := filepath.Join(filepath.Dir(jarPath), name+".config")
	opts := append([]string{"-Dservice.host=" + addr.String()}, props...)
	p := Start(t, h, opts, "ServiceMain", append([]string{name, config}, overrides...)...)
	l := p.WaitLine(t, regexp.MustCompile(`^\w+ (serviceID=|FAILED)`), 60*time.Second)
	m := serviceLine.FindStringSubmatch(l)
	if m == nil {
		p.Wait(t, 10*time.Second) // it exits after saying so; then its stderr is whole
		t.Fatalf("%s did not start: %s\n%s", name, l, lastLines(p.stderr.String(), 30))
	}
	return &Service{Program: p, ServiceID: m[2], Endpoint: m[3]}
}

// Run runs one of the jar's programs (RegistrarClient, JoinService,
// SdmLookup, LookupWatch, ...) in lab host h with args, and returns its
// standard output when it exits, within timeout (then it is killed).
// Programs exit non-zero when a check of theirs failed; that is returned
// as err with the output, for the test to report.
func Run(t testing.TB, h *netlab.Host, timeout time.Duration, javaOpts []string, class string, args ...string) (string, error) {
	t.Helper()
	java := Java(t)
	cp := classpath(t, class)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := h.Command(ctx, java, append(append(append([]string{}, javaOpts...), "-cp", cp, class), args...)...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%s: %w\nstderr:\n%s", class, err, lastLines(stderr.String(), 30))
	}
	return stdout.String(), err
}

// Start starts one of the jar's programs in h and returns it running;
// the test's end kills it.
func Start(t testing.TB, h *netlab.Host, javaOpts []string, class string, args ...string) *Program {
	t.Helper()
	java := Java(t)
	cp := classpath(t, class)
	cmd := h.Command(context.Background(), java, append(append(append([]string{}, javaOpts...), "-cp", cp, class), args...)...)
	p := &Program{cmd: cmd, lines: make(chan string, 1024), exited: make(chan struct{})}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", class, err)
	}
	t.Cleanup(p.Kill)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.out = append(p.out, sc.Text())
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		cmd.Wait()
		close(p.exited)
	}()
	return p
}

// Program is a running Java program.
type Program struct {
	cmd    *exec.Cmd
	lines  chan string
	exited chan struct{}
	stderr strings.Builder
	mu     sync.Mutex
	out    []string
}

// WaitLine waits for a line of output matching re and returns it.
func (p *Program) WaitLine(t testing.TB, re *regexp.Regexp, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l := <-p.lines:
			if re.MatchString(l) {
				return l
			}
		case <-p.exited:
			// Lines read before the exit may still be queued.
			for {
				select {
				case l := <-p.lines:
					if re.MatchString(l) {
						return l
					}
				default:
					t.Fatalf("program exited before printing %q; output:\n%s", re, p.Output())
				}
			}
		case <-deadline:
			t.Fatalf("no line matching %q in %s; output:\n%s", re, timeout, p.Output())
		}
	}
}

// Pid is the Java process's (for its CPU time and memory).
func (p *Program) Pid() int { return p.cmd.Process.Pid }

// Output is everything printed so far.
func (p *Program) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.out, "\n")
}

// Wait waits for the program to exit, up to timeout, and returns its
// output.
func (p *Program) Wait(t testing.TB, timeout time.Duration) string {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(timeout):
		t.Fatalf("program still running after %s; output:\n%s", timeout, p.Output())
	}
	return p.Output()
}

// Kill stops the program at once and waits for it.
func (p *Program) Kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Command is one of the jar's programs to run on this host, outside any
// lab (the codec checks, Decode and Encode, need no network).
func Command(t testing.TB, ctx context.Context, class string, args ...string) *exec.Cmd {
	t.Helper()
	return exec.CommandContext(ctx, Java(t), append([]string{"-cp", classpath(t, class), class}, args...)...)
}
