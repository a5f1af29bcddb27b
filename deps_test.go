package jinid

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jinid/jinid/internal/features"
)

const module = "github.com/jinid/jinid"

// layers ranks the top-level folders, lowest first: a package may import
// from its own folder and from those ranked below it.
var layers = []string{"internal", "discovery", "services", "announce", "cmd"}

// wings are folders by subject rather than by layer: each of their
// packages stands at the layer of what it is. The Java wing's codecs
// (Java serialization, Jini ERI) are ground beneath discovery, which
// reads Java registrar proxies; its face of the lookup service is a
// service.
var wings = map[string]string{
	"java/javaio":      "internal",
	"java/jeri":        "internal",
	"java/lineage":     "internal",
	"java/reggie":      "discovery",
	"java/javalookup":  "services",
	"java/javahelpers": "services",
}

// layerOf is the layer a package stands at.
func layerOf(pkg string) string {
	if l, ok := wings[pkg]; ok {
		return l
	}
	return top(pkg)
}

// imports lists, for every package of the module, the module packages
// its non-test files import.
func imports(t *testing.T) map[string][]string {
	out, _ := walkImports(t)
	return out
}

// walkImports returns imports' answer and the test rigs, made for tests
// alone: the packages named ...test, as net/http/httptest is
// (discoverytest, jinidtest), those whose non-test files import
// "testing", and the rigs of internal/rig (netlab, riverpeer, testenv,
// vectors).
func walkImports(t *testing.T) (out map[string][]string, rigs map[string]bool) {
	t.Helper()
	out, rigs = map[string][]string{}, map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		if strings.HasSuffix(pkg, "test") || strings.HasPrefix(pkg, "internal/rig/") {
			rigs[pkg] = true
		}
		for _, spec := range f.Imports {
			p, _ := strconv.Unquote(spec.Path.Value)
			if p == "testing" {
				rigs[pkg] = true
			}
			if rest, ok := strings.CutPrefix(p, module+"/"); ok && !slices.Contains(out[pkg], rest) {
				out[pkg] = append(out[pkg], rest)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 20 {
		t.Fatalf("found only %d importing packages: is the walk right?", len(out))
	}
	// A rig's tools (floodtest/jinidflood) are in its folder, and rigs too.
	for pkg := range out {
		for r := range rigs {
			if strings.HasPrefix(pkg, r+"/") {
				rigs[pkg] = true
			}
		}
	}
	return out, rigs
}

// Test rigs are for tests: no package the binary is made of imports one
// (as net/http/httptest is never imported by a server).
func TestRigsOnlyInTests(t *testing.T) {
	all, rigs := walkImports(t)
	if !rigs["discovery/discoverytest"] || !rigs["internal/rig/netlab"] || !rigs["internal/rig/vectors"] {
		t.Fatalf("rigs %v: is the walk right?", rigs)
	}
	for pkg, deps := range all {
		for _, dep := range deps {
			if rigs[dep] && !rigs[pkg] {
				t.Errorf("%s imports the test rig %s", pkg, dep)
			}
		}
	}
}

func top(pkg string) string {
	first, _, _ := strings.Cut(pkg, "/")
	return first
}

// No import points up the layers or across them in a circle: packages
// import only their own layer and those below.
func TestImportDirections(t *testing.T) {
	for pkg, deps := range imports(t) {
		rank := slices.Index(layers, layerOf(pkg))
		if rank < 0 {
			if pkg == "." {
				continue
			}
			t.Errorf("%s: %q is neither a layer %v nor a package of a wing", pkg, layerOf(pkg), layers)
			continue
		}
		for _, dep := range deps {
			if r := slices.Index(layers, layerOf(dep)); r > rank {
				t.Errorf("%s imports %s: %s is above %s", pkg, dep, layerOf(dep), layerOf(pkg))
			}
		}
	}
}

// servicesRanks ranks the packages of services/, lowest first: the wire
// types at the foundation, the core, the services beside one another
// (and the API's Go client, a service's way to another host), the API
// assembly on top (with the test rigs that serve it). Each may import its own rank and those below.
var servicesRanks = [][]string{
	{"services/apitypes"},
	{"services/store", "services/fault", "services/httpjson", "services/lease", "services/event", "services/outbound", "services/access"},
	{"services/lookup", "java/javalookup", "services/lds", "services/renewal", "services/mailbox", "services/txn", "services/txn/participant", "services/api/client"},
	{"java/javahelpers"}, // the helper services' Java faces: each on its service and the registrar's Java face (its lineage, its events' transport)
	{"services/cluster"}, // the nodes on etcd: places the services' requests, knows them as Placers
	{"services/api", "services/txn/txntest", "services/store/storetest"}, // a test rig may stand on everything
}

func servicesRank(pkg string) int {
	for i, rank := range servicesRanks {
		if slices.Contains(rank, pkg) {
			return i
		}
	}
	return -1
}

// Inside services/ the layers go on: no import points up the ranks
// above, and within the services' rank each knows only what the rules
// below let it.
func TestServicesLayers(t *testing.T) {
	all := imports(t)
	for pkg, deps := range all {
		if layerOf(pkg) != "services" {
			continue
		}
		rank := servicesRank(pkg)
		if rank < 0 {
			t.Errorf("%s is in no rank of servicesRanks: place it", pkg)
			continue
		}
		for _, dep := range deps {
			if layerOf(dep) == "services" && servicesRank(dep) > rank {
				t.Errorf("%s imports %s: an upward import inside services/", pkg, dep)
			}
		}
	}
	core := append(slices.Clone(servicesRanks[0]), servicesRanks[1]...)
	rules := []struct {
		pkgs  []string
		allow []string // the services/ packages they may import
		why   string
	}{
		{[]string{"services/api/client"}, []string{"services/apitypes"}, "the client links only the wire types"},
		{core, core, "the core serves the services and knows none of them"},
		{[]string{"services/lookup", "services/lds", "services/mailbox", "services/txn"}, core, "a service knows the core, not the other services"},
		{[]string{"services/renewal"}, append(slices.Clone(core), "services/api/client"), "the renewal service renews through the API client"},
		{[]string{"java/javalookup"}, append(slices.Clone(core), "services/lookup"), "the Java face of the lookup service knows the lookup service and the core"},
		{[]string{"java/javahelpers"}, append(slices.Clone(core), "services/renewal", "services/mailbox", "services/lds", "services/txn", "java/javalookup"),
			"the helper services' Java faces know their services, the registrar's Java face and the core"},
		{[]string{"services/cluster"}, append(slices.Clone(core), "services/mailbox", "services/lookup"),
			"the cluster places the services' requests as they say (httpjson.Placer), knowing of them only the mailbox's listener path and the lookup service's copy (a node's reads)"},
	}
	// The cluster is one part the composition root adds: the API
	// assembles what it is given, and no other part reaches the shards
	// around it.
	for pkg, deps := range all {
		if slices.Contains(deps, "services/cluster") && pkg != "cmd/jinid/internal/app" && pkg != "cmd/jinid" {
			t.Errorf("%s imports services/cluster: only the composition root adds the cluster (and the CLI reads its placement)", pkg)
		}
	}
	for _, dep := range all["services/apitypes"] {
		t.Errorf("services/apitypes imports %s: the wire types are a leaf, a client links them alone", dep)
	}
	for _, rule := range rules {
		for _, pkg := range rule.pkgs {
			for _, dep := range all[pkg] {
				if layerOf(dep) == "services" && !slices.Contains(rule.allow, dep) && dep != pkg {
					t.Errorf("%s imports %s: %s", pkg, dep, rule.why)
				}
			}
		}
	}
}

// Requests jinid sends on someone's behalf go through the clients of
// services/outbound, where their limits and address policy live: no other
// package makes an HTTP client of its own (the API's Go client and the
// CLI's commands excepted: their requests are the user's own; the
// nodes of a cluster, which speak only to one another, at the addresses
// and with the certificates etcd holds for them, never where a client
// says; and the test rigs, which are the tests' clients).
func TestOutboundOnlyThroughOutbound(t *testing.T) {
	allowed := map[string]bool{"services/outbound": true, "services/api/client": true, "cmd/jinid": true, "internal/http1": true,
		"services/cluster": true}
	_, rigs := walkImports(t)
	maps.Copy(allowed, rigs)
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		if allowed[filepath.ToSlash(filepath.Dir(path))] {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range []string{"http.Client{", "http.DefaultClient", "http.Get(", "http.Post(", "http.DefaultTransport", "http1.Client{"} {
			if strings.Contains(string(src), s) {
				t.Errorf("%s uses %s: make outbound clients with services/outbound", path, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The cluster is not gone around: a node joins the deployment, and
// holds its membership, through services/cluster (cluster.Join); only
// the cluster (and the store itself, and test rigs) touch the store's
// etcd node. The rule is checked on the tree, and shown to catch a root
// that joins on its own.
func TestClusterNotGoneAround(t *testing.T) {
	_, rigs := walkImports(t)
	allowed := map[string]bool{"services/cluster": true, "services/store": true}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		if allowed[pkg] || rigs[pkg] {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, use := range aroundTheCluster(t, fset, path, src) {
			t.Errorf("%s uses store.%s: join and follow the members through services/cluster (cluster.Join)", path, use)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	root := []byte(`package app
import "github.com/jinid/jinid/services/store"
func join() { n, _ := store.JoinEtcd(nil, store.EtcdConfig{}); _ = n }
`)
	if got := aroundTheCluster(t, fset, "app.go", root); !slices.Equal(got, []string{"JoinEtcd"}) {
		t.Errorf("a root joining on its own: %v, want JoinEtcd found", got)
	}
}

// aroundTheCluster lists the uses in a file of what is the cluster's to
// use: the store's etcd node.
func aroundTheCluster(t *testing.T, fset *token.FileSet, path string, src []byte) []string {
	t.Helper()
	f, err := parser.ParseFile(fset, path, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	name := ""
	for _, spec := range f.Imports {
		if p, _ := strconv.Unquote(spec.Path.Value); p == module+"/services/store" {
			name = "store"
			if spec.Name != nil {
				name = spec.Name.Name
			}
		}
	}
	if name == "" {
		return nil
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == name && (sel.Sel.Name == "JoinEtcd" || sel.Sel.Name == "EtcdNode") {
				out = append(out, sel.Sel.Name)
			}
		}
		return true
	})
	return out
}

// The daemon's metrics are Prometheus text without protobuf: linking
// protobuf (as client_golang does) costs about 2 MB on mips, because its
// reflection keeps the linker from dropping unused methods anywhere in
// the binary. Only the etcd store brings it (etcd's client is gRPC), and
// the builds that leave etcd out (the router's) are without it.
func TestDaemonLinksNoProtobuf(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	linksNone(t, "jinid_omit_etcd", "google.golang.org/protobuf", "github.com/golang/protobuf", "github.com/prometheus/client_golang")
	linksNone(t, "", "github.com/prometheus/client_golang")
}

// profile is the build tags of one of jinid's profiles (scripts/profile,
// where they are defined).
func profile(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("sh", "scripts/profile", name).Output()
	if err != nil {
		t.Fatalf("scripts/profile %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// linksNone fails the test if the jinid command, built with tags,
// links a package under one of the prefixes.
func linksNone(t *testing.T, tags string, prefixes ...string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-tags", tags, "-deps", "./cmd/jinid").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		for _, bad := range prefixes {
			if strings.HasPrefix(p, bad) {
				t.Errorf("jinid (tags %q) links %s", tags, p)
			}
		}
	}
}

// The router's two binaries build, and each links only its half: the
// daemon no packet decoding (gopacket fills megabytes of tables at init,
// in every process that links it) and no client commands; the tools no
// daemon. The daemon also leaves out what its 8 MB budget cannot carry
// (docs/performance.md, "Router builds"): cobra and the regular
// expressions and templates it brings, miekg/dns (DNS-SD is the system
// responder's there), and any TLS handshake (net/http's Server and
// Transport link both; http1 serves and sends instead).
func TestRouterBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the router binaries")
	}
	for _, c := range []struct {
		tags      string
		forbidden []string
		// elsewhere is a command of the other binary: it says where.
		elsewhere, where string
	}{
		{profile(t, "router"), []string{"github.com/google/gopacket", module + "/cmd/jinid/internal/inspect", module + "/cmd/jinid/internal/finder",
			"github.com/spf13/cobra", "regexp", "text/template", "github.com/miekg/dns", module + "/announce/dnssd",
			module + "/java/javalookup", module + "/java/jeri", "go.etcd.io/etcd/", "google.golang.org/grpc"},
			"inspect", "jinid-tools"},
		// The tools are clients: they link no service, no store, no
		// manager (the participant library speaks the wire types alone).
		{profile(t, "tools"), []string{module + "/cmd/jinid/internal/app", module + "/services/lookup", module + "/java/javalookup",
			module + "/services/store", module + "/services/lease", "go.etcd.io/bbolt"},
			"daemon", "jinid-daemon"},
	} {
		bin := filepath.Join(t.TempDir(), "jinid")
		build := exec.Command("go", "build", "-tags", c.tags, "-o", bin, "./cmd/jinid")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build -tags %q: %v\n%s", c.tags, err, out)
		}
		// A template executed anywhere (html/template, or a cobra
		// template of our own) keeps every exported method in the binary:
		// megabytes on mips.
		syms, err := exec.Command("go", "tool", "nm", bin).CombinedOutput()
		if err != nil {
			t.Fatalf("go tool nm: %v", err)
		}
		if strings.Contains(string(syms), "text/template.(*state).evalField") {
			t.Errorf("-tags %q executes a text template", c.tags)
		}
		if strings.Contains(c.tags, "jinid_omit_tls") {
			for _, sym := range []string{"crypto/tls.(*Conn).clientHandshake", "crypto/tls.(*Conn).serverHandshake",
				"net/http.(*Server).Serve", "net/http.(*Transport).roundTrip"} {
				if strings.Contains(string(syms), " "+sym+"\n") {
					t.Errorf("-tags %q links %s", c.tags, sym)
				}
			}
		}
		said, err := exec.Command(bin, c.elsewhere).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(said), c.where) {
			t.Errorf("-tags %q: jinid %s: %v %q, want exit 2 naming %s", c.tags, c.elsewhere, err, said, c.where)
		}
		linksNone(t, c.tags, c.forbidden...)
	}
}

// docs/architecture.md is the map of the code: it names every package
// (as `path`, from the module root), so a new one cannot go unmapped.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]bool{}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			pkgs[filepath.ToSlash(filepath.Dir(path))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 40 {
		t.Fatalf("found only %d packages: is the walk right?", len(pkgs))
	}
	for _, pkg := range slices.Sorted(maps.Keys(pkgs)) {
		if !strings.Contains(string(doc), "`"+pkg+"`") {
			t.Errorf("docs/architecture.md does not name the package `%s`", pkg)
		}
	}
}

// featureLinks says, for each optional feature (internal/features), the
// packages and functions a build with it links and one without it does
// not, both built beside the other tags listed (those that omit other
// features linking the same packages: the tools decode Java calls too).
var featureLinks = map[string]struct {
	packages, symbols, beside []string
}{
	"daemon": {packages: []string{module + "/cmd/jinid/internal/app", module + "/services/api", module + "/announce"}},
	"tools": {packages: []string{"github.com/google/gopacket", "github.com/spf13/cobra",
		module + "/cmd/jinid/internal/inspect", module + "/cmd/jinid/internal/finder"}},
	"java": {packages: []string{module + "/java/jeri", module + "/java/javalookup"}, beside: []string{"jinid_omit_tools"}},
	// net/http's HTTP/2 links both handshakes whatever jinid does, and
	// etcd's client (gRPC) the client's.
	"tls": {symbols: []string{"crypto/tls.(*Conn).serverHandshake", "crypto/tls.(*Conn).clientHandshake"},
		beside: []string{"jinid_omit_tools", "nethttpomithttp2", "jinid_omit_etcd"}},
	"dnssd": {packages: []string{"github.com/miekg/dns", module + "/announce/dnssd"}, beside: []string{"jinid_omit_tools"}},
	"etcd":  {packages: []string{"go.etcd.io/etcd/client/v3", "google.golang.org/grpc"}, beside: []string{"jinid_omit_tools"}},
}

// Each optional feature is left out by its tag alone: built beside the
// tags featureLinks gives it, a build with the feature links its packages
// and functions and one without it links none of them.
func TestFeaturesOmitWhatTheyLink(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list and go build")
	}
	if len(featureLinks) != len(features.All()) {
		t.Errorf("featureLinks has %d features, internal/features %d", len(featureLinks), len(features.All()))
	}
	for _, f := range features.All() {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			fl, ok := featureLinks[f.Name]
			if !ok || len(fl.packages)+len(fl.symbols) == 0 {
				t.Fatalf("featureLinks says nothing %s links", f.Name)
			}
			with := strings.Join(fl.beside, " ")
			without := strings.TrimSpace(with + " " + f.Tag)
			if len(fl.packages) > 0 {
				have, lack := deps(t, with), deps(t, without)
				for _, p := range fl.packages {
					if !have[p] {
						t.Errorf("with %s (tags %q), jinid does not link %s: is the list right?", f.Name, with, p)
					}
					if lack[p] {
						t.Errorf("without %s (tags %q), jinid still links %s", f.Name, without, p)
					}
				}
			}
			if len(fl.symbols) > 0 {
				have, lack := symbols(t, with), symbols(t, without)
				for _, sym := range fl.symbols {
					if !strings.Contains(have, " "+sym+"\n") {
						t.Errorf("with %s (tags %q), jinid does not link %s: is the list right?", f.Name, with, sym)
					}
					if strings.Contains(lack, " "+sym+"\n") {
						t.Errorf("without %s (tags %q), jinid still links %s", f.Name, without, sym)
					}
				}
			}
		})
	}
}

// deps is the set of packages the jinid command links, built with tags.
func deps(t *testing.T, tags string) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-tags", tags, "-deps", "./cmd/jinid").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -tags %q: %v\n%s", tags, err, out)
	}
	set := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		set[p] = true
	}
	return set
}

// symbols is go tool nm's listing of the jinid command built with tags.
func symbols(t *testing.T, tags string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "jinid")
	build := exec.Command("go", "build", "-tags", tags, "-o", bin, "./cmd/jinid")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags %q: %v\n%s", tags, err, out)
	}
	out, err := exec.Command("go", "tool", "nm", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool nm: %v\n%s", err, out)
	}
	return string(out)
}

// The feature tags are exactly those the code uses, and a profile is
// made of feature tags (and Go's own nethttpomithttp2, which leaves
// HTTP/2 out of net/http).
func TestFeatureTagsAreListed(t *testing.T) {
	listed := map[string]bool{}
	for _, f := range features.All() {
		listed[f.Tag] = true
	}
	used := map[string]bool{}
	tag := regexp.MustCompile(`\bjinid_[a-z0-9_]+`)
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for line := range strings.Lines(string(b)) {
			if !strings.HasPrefix(line, "//go:build ") {
				continue
			}
			for _, m := range tag.FindAllString(line, -1) {
				used[m] = true
				if !listed[m] {
					t.Errorf("%s: build tag %s is not a feature of internal/features", path, m)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for tg := range listed {
		if !used[tg] {
			t.Errorf("feature tag %s is on no file", tg)
		}
	}
	for _, name := range []string{"full", "router", "tools"} {
		for _, tg := range strings.Fields(profile(t, name)) {
			if !listed[tg] && tg != "nethttpomithttp2" {
				t.Errorf("profile %s: %s is not a feature's tag", name, tg)
			}
		}
	}
}
