//go:build !jinid_omit_java

package app

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/jinid/jinid/discovery"
	"github.com/jinid/jinid/internal/lifecycle"
	"github.com/jinid/jinid/java/javahelpers"
	"github.com/jinid/jinid/java/javalookup"
	"github.com/jinid/jinid/java/jeri"
	"github.com/jinid/jinid/services/access"
	"github.com/jinid/jinid/services/httpjson"
	"github.com/jinid/jinid/services/lookup"
	"github.com/jinid/jinid/services/outbound"
)

// Java tells whether this build serves Java clients: one built without
// the Java feature (jinid_omit_java, as the router profile is) does not.
const Java = true

// javaMay says what Java clients, who send no token, may do: what a
// request without a token may (--anonymous), and from the networks of
// --java-register-from, register and look up.
func (d *Daemon) javaMay(need access.Scope) func(jeri.Conn) error {
	anon := d.cfg.Anonymous
	if anon == "" {
		anon = access.ScopeRead
	}
	return func(c jeri.Conn) error {
		if anon.Allows(need) {
			return nil
		}
		ap, err := netip.ParseAddrPort(c.Remote.String())
		if err == nil {
			for _, p := range d.cfg.JavaRegisterFrom {
				if p.Contains(ap.Addr().Unmap()) {
					return nil
				}
			}
		}
		what := "register services or event listeners, renew leases or cancel them"
		if need == access.ScopeRead {
			what = "look up services"
		}
		return fmt.Errorf("jinid: Java clients at %s may not %s here; its administrator can allow it with --java-register-from", ap.Addr().Unmap(), what)
	}
}

// buildJava serves the registrar to Java clients: Jini ERI on a port of
// its own, kept with the object's Uuid in the store.
func (d *Daemon) buildJava(ctx context.Context) error {
	id, err := javalookup.LoadIdentity(d.store)
	if err != nil {
		return err
	}
	port := d.cfg.JavaPort
	if port == 0 {
		port = id.Port
	}
	var ln net.Listener
	err = d.cfg.Namespace.Do(func() error {
		ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", net.JoinHostPort("", strconv.Itoa(port)))
		if err != nil && d.cfg.JavaPort == 0 && port != 0 {
			// The port of the last run is taken: Java clients holding
			// the old proxy rediscover jinid and get the new one.
			d.log.Warn("the Jini ERI port of the last run is in use; taking another", "port", port, "err", err)
			ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", ":0")
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("listening for Java clients (Jini ERI) on port %d: %w", port, err)
	}
	id.Port = ln.Addr().(*net.TCPAddr).Port
	if err := javalookup.SaveIdentity(d.store, id); err != nil {
		ln.Close()
		return fmt.Errorf("keeping the Java registrar's identity: %w", err)
	}
	java, err := javalookup.New(javalookup.Config{Registrar: d.registrar, Grantor: d.grantor, Identity: id, Metrics: d.obs.metrics,
		UnicastPort: d.unicastPort, MayRegister: d.javaMay(access.ScopeClient), MayRead: d.javaMay(access.ScopeRead), Logger: d.log})
	if err != nil {
		ln.Close()
		return err
	}
	d.java = java
	transport := java.NewTransport(outbound.Dialer(outbound.Config{Namespace: d.cfg.Namespace, Policy: d.policy}))
	d.events.AddTransport("jeri", transport)
	disp := jeri.NewDispatcher()
	disp.Export(id.Object, java)
	mayRead := d.javaMay(access.ScopeRead)
	srv := jeri.NewServer(ln, jeri.ServerConfig{Handler: disp.Handle, Logger: d.log.With("component", "jeri"),
		MaxBuffered: d.limits.JavaBuffered, MaxBufferedTotal: d.limits.JavaBufferedTotal,
		MaxConns: d.limits.JavaConns, MaxPerSource: d.limits.JavaConnsPerSource,
		MaxConnsKey: "limits.javaConns", MaxPerSourceKey: "limits.javaConnsPerSource", Metrics: d.obs.metrics,
		SourceBits4: d.limits.SourcePrefix4, SourceBits6: d.limits.SourcePrefix6,
		// A source that may not even look has nothing to do here:
		// nothing of what it sends is read.
		Allow: func(remote net.Addr) bool { return mayRead(jeri.Conn{Remote: remote}) == nil }})
	if err := d.buildJavaHelpers(java, id, disp, transport); err != nil {
		ln.Close()
		return err
	}
	d.parts.Add("the lookup service for Java clients (Jini ERI)", srv)
	d.parts.Add("events to Java listeners", lifecycle.Funcs{ShutdownFunc: func(context.Context) error { return transport.Close() }})
	d.log.Info("serving Java clients", "port", id.Port, "object", id.Object.String(), "lineage", java.Lineage().Name)
	return nil
}

// buildJavaHelpers serves the helper services to Java as the River ones
// are served: each its server object on the Jini ERI port, its item (the
// River proxy, made for the address a client reached jinid on) in the
// lookup service. A cluster serves them over HTTP only: its work is cut
// into shards held by different nodes, and their Java faces are not yet
// routed there.
func (d *Daemon) buildJavaHelpers(java *javalookup.Service, id javalookup.Identity, disp *jeri.Dispatcher, transport *javalookup.Transport) error {
	own := d.registrar.Services()
	if d.cl != nil || d.obs.renewal == nil {
		d.dropServices(own, nil)
		d.log.Info("the helper services are not served to Java in a cluster: Java programs use them over the HTTP API")
		return nil
	}
	if anon := cmp.Or(d.cfg.Anonymous, access.ScopeRead); !anon.Allows(access.ScopeClient) && len(d.cfg.JavaRegisterFrom) == 0 {
		// No Java client may make a set, a mailbox, a discovery
		// registration or a transaction: offering the services would
		// only have each refused at its first call.
		d.dropServices(own, nil)
		d.log.Info("the helper services are not offered to Java clients: none may use them (--java-register-from names who may)")
		return nil
	}
	dial := outbound.Dialer(outbound.Config{Namespace: d.cfg.Namespace, Policy: d.policy})
	cfg := javahelpers.Config{Lineage: java.Lineage(), Grantor: d.grantor, Identity: id, Outbound: d.policy, Dial: dial,
		MayChange: d.javaMay(access.ScopeClient), MayRead: d.javaMay(access.ScopeRead), Logger: d.log, Metrics: d.obs.metrics}
	norm, err := javahelpers.NewNorm(cfg, d.obs.renewal)
	if err != nil {
		return err
	}
	d.renewers.Java = norm.Renewer()
	transport.AddEvents(norm.Events)
	d.parts.Add("the lease renewal service's Java grantors", lifecycle.Funcs{ShutdownFunc: func(context.Context) error { return norm.Close() }})
	mercury, err := javahelpers.NewMercury(cfg, d.mbox.Load(), transport)
	if err != nil {
		return err
	}
	d.javaOwns = mercury.Owns
	fiddler, err := javahelpers.NewFiddler(cfg, d.obs.lds)
	if err != nil {
		return err
	}
	transport.AddEvents(fiddler.Events)
	helpers := []javaHelper{
		{"norm", "Lease Renewal Service", "/v1/renewal/", norm.Object(), norm, norm.Proxy, javahelpers.Types},
		{"mercury", "Event Mailbox", "/v1/mailbox/", mercury.Object(), mercury, mercury.Proxy, javahelpers.MercuryTypes},
		{"fiddler", "Lookup Discovery Service", "/v1/lds/", fiddler.Object(), fiddler, fiddler.Proxy, javahelpers.FiddlerTypes},
	}
	api := &javahelpers.API{Grantor: d.grantor, Mercury: mercury}
	d.javaAPI = api
	if d.obs.txn != nil { // --no-transactions: none
		mahalo, err := javahelpers.NewMahalo(cfg, d.obs.txn)
		if err != nil {
			return err
		}
		api.Mahalo = mahalo
		d.parts.Add("the transaction manager's Java participants", lifecycle.Funcs{ShutdownFunc: func(context.Context) error { return mahalo.Close() }})
		helpers = append(helpers, javaHelper{"mahalo", "Transaction Manager", "/v1/transactions", mahalo.Object(), mahalo, mahalo.Proxy, javahelpers.MahaloTypes})
	}
	var keep []string
	proxies := map[string]func(string) ([]byte, error){}
	d.javaJoin = nil
	d.javaProxy = func(sid, host string) ([]byte, error) { return proxies[sid](host) }
	for _, h := range helpers {
		disp.Export(h.object, h.served)
		sid := d.ownServiceID(h.name)
		java.Own(sid, h.proxy)
		it := lookup.Item{ServiceID: sid, Types: h.types,
			Service: json.RawMessage(fmt.Sprintf(`{"service":%q,"api":%q}`, h.name, h.api)),
			Attributes: []lookup.Attribute{
				{Type: "net.jini.lookup.entry.Name", Fields: map[string]any{"name": "jinid " + strings.ToLower(h.what)}},
				{Type: "net.jini.lookup.entry.ServiceInfo", Fields: map[string]any{"name": h.what,
					"manufacturer": "jinid", "vendor": "jinid", "model": h.name, "version": "", "serialNumber": ""}},
			}}
		if _, err := d.registrar.RegisterService(it); err != nil {
			return fmt.Errorf("registering the %s for Java clients: %w", strings.ToLower(h.what), err)
		}
		keep = append(keep, sid)
		proxies[sid] = h.proxy
		d.javaJoin = append(d.javaJoin, it)
	}
	d.dropServices(own, keep)
	names := make([]string, len(helpers))
	for i, h := range helpers {
		names[i] = h.name
	}
	d.log.Info("serving the helper services to Java clients", "services", strings.Join(names, ","), "port", id.Port)
	return nil
}

// javaHelper is a helper service as Java finds it: its server object,
// and its item in the lookup service (named name, described by what, on
// the API at api).
type javaHelper struct {
	name, what, api string
	object          jeri.Uuid
	served          jeri.Object
	proxy           func(host string) ([]byte, error)
	types           []string
}

// ownServiceID is the ServiceID of one of jinid's own services in its
// lookup service: made of the lookup service's, the same at every start.
func (d *Daemon) ownServiceID(name string) string {
	sum := sha256.Sum256([]byte("jinid service\x00" + d.registrar.Meta().ServiceID.String() + "\x00" + name))
	sum[6], sum[8] = sum[6]&0x0f|0x50, sum[8]&0x3f|0x80 // a name-based UUID (version 5, RFC 9562)
	return discovery.ServiceID(sum[:16]).String()
}

// javaServices adds the Java forms of registrations to the API's
// services, once buildJava made them.
func (d *Daemon) javaServices(s []httpjson.Service) []httpjson.Service {
	if d.javaAPI != nil {
		s = append(s, d.javaAPI)
	}
	return s
}

// withoutJava, with Java clients off (--no-java), removes what an
// earlier run registered for them: jinid's services as Java finds them.
func (d *Daemon) withoutJava() { d.dropServices(d.registrar.Services(), nil) }

// dropServices cancels the registrations of jinid's own services
// (lookup.ServiceOwner) that were made before and are not in keep: a
// service no longer served to Java is no longer found.
func (d *Daemon) dropServices(had, keep []string) {
	for _, id := range had {
		if slices.Contains(keep, id) {
			continue
		}
		rec, err := d.registrar.Lease(id)
		if err == nil {
			err = d.grantor.Cancel(rec.ID)
		}
		if err != nil {
			d.log.Warn("removing a service no longer served to Java", "serviceID", id, "err", err)
		}
	}
}
