// JinidPeer: jinid's own Java test programs, beside the jar's (compiled
// at test time by riverpeer.Harness against river-peer.jar).
//
//   JinidPeer cache --locator L --listen-host H --secs N
//       a ServiceDiscoveryManager LookupCache for com.example.Hello,
//       printing "added SID NAME", "changed SID NAME", "removed SID"
//   JinidPeer join --locator L --name N --change-after S --secs S
//       a JoinManager service (com.example.HelloProxy, Name(N)) that sets
//       its attributes to Name(N-changed) after --change-after seconds and
//       terminates after --secs; prints "serviceID SID", "changed",
//       "terminated"
//   JinidPeer bench --locator L --n N
//       times register, lookup (by ServiceID) and renew, N of each, and
//       prints "bench OP n=N p50=US p99=US mean=US" per operation
//   JinidPeer fill --locator L --n N --secs S
//       registers N services (Name(fill-i), 10 min leases), prints
//       "filled N", holds them S seconds and cancels them
//   JinidPeer browse --locator L
//       registers two services and prints what getServiceTypes,
//       getEntryClasses and getFieldValues answer ("browse WHAT [...]")
//   JinidPeer storm --locator L --threads N --calls C
//       N threads, each with a registration of its own, renew it C times
//       each, all at once (JGDMS opens a connection per call in flight);
//       prints "storm-fail WHY" for the first failures, then
//       "storm threads=N calls=K ok=K failed=F ms=T persec=R p50=US p99=US"
//   JinidPeer probe --locator L
//       calls the registrar's endpoint with a method it does not have and
//       an object it does not export; prints "probe WHAT EXCEPTION: MSG"
//   JinidPeer norm-hold --locator R --norm-locator J --lease MS --secs S
//       registers a service at the lookup service R with a --lease lease,
//       hands the lease to the LeaseRenewalService found at J (a set,
//       renewFor(lease, FOREVER, --lease)), looks its ServiceID up at R
//       every second for S seconds; prints "handed SID" then
//       "held checks=T found=K renewals=N"
//   JinidPeer notify-listener --locator R --listener B64 --secs S
//       reads a RemoteEventListener from B64 (a MarshalledObject's
//       stream), registers it at R for com.example.Hello events (handback
//       "hb-http"), registers a Hello there and cancels it after S seconds;
//       prints "registered SID", "cancelled"
//   JinidPeer pull --locator J --secs S
//       pullRegister at the EventMailbox found at J; prints "registration
//       ID" (32 hex digits), then every event its iterator yields within S
//       seconds: "event class=C source=S id=N seq=N handback=H"
//   JinidPeer helper-bench --locator L --service norm|mercury|fiddler|mahalo
//           --threads N --calls C --listen-host H [--service-id SID]
//       times the service's main calls from N threads, C calls each, all
//       at once, after a warm-up: Norm's createLeaseRenewalSet and renewFor,
//       Mercury's pullRegister and a notify to a mailbox's listener,
//       Fiddler's register and getRegistrars, Mahalo's create (then its
//       lease cancelled) and create-then-commit; prints one line per call,
//       "bench SERVICE OP threads=N calls=K failed=F persec=R p50=US p99=US"
//   JinidPeer spec --locator L --service norm|mercury|fiddler|mahalo
//           --listen-host H [--service-id SID]
//       checks the rules of the service's specification (LR, EM, LD, TX)
//       that a Java client can see, through the River proxy; prints
//       "CHECK RULE OK DETAIL" or "CHECK RULE FAIL WHY" per rule, then
//       "SPEC ok=N/M"
//   JinidPeer hold --locator J --listen-host H --go-file F --secs S
//       makes a renewal set holding a service's lease (the service
//       registered at J), a pull mailbox with one event, and a lookup
//       discovery registration at J's helper services; prints "holding",
//       waits for file F (J is restarted meanwhile), then uses the same
//       proxies: prints "after leases=N event=SEQ groups=N renewed=yes"
//   JinidPeer txn --locator J --listen-host H --go-file F --secs S
//       creates a transaction at the TransactionManager found at J, joins
//       a participant exported on H, prints "created ID" (Java's long),
//       waits (S seconds at most) for file F to exist, commits, and prints
//       "participant CALLS" once the participant heard commit
import java.lang.reflect.Field;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.util.*;
import com.example.Hello;
import com.example.HelloProxy;
import net.jini.core.discovery.LookupLocator;
import net.jini.core.entry.Entry;
import net.jini.core.event.RemoteEventListener;
import net.jini.core.lease.Lease;
import net.jini.core.lookup.*;
import net.jini.discovery.LookupDiscoveryManager;
import net.jini.id.UuidFactory;
import net.jini.jeri.BasicInvocationHandler;
import net.jini.jeri.BasicObjectEndpoint;
import net.jini.lookup.LookupCache;
import net.jini.lookup.ServiceDiscoveryEvent;
import net.jini.lookup.ServiceDiscoveryListener;
import net.jini.lookup.ServiceDiscoveryManager;
import net.jini.lookup.entry.Name;

public class JinidPeer {
    static final Map<String, String> opts = new HashMap<>();

    static String opt(String k, String def) { return opts.getOrDefault(k, def); }

    static synchronized void say(String s) { System.out.println(s); System.out.flush(); }

    public static void main(String[] a) throws Exception {
        Preload.classes();
        for (int i = 1; i + 1 < a.length; i += 2) opts.put(a[i], a[i + 1]);
        switch (a[0]) {
            case "cache": cache(); break;
            case "bench": bench(); break;
            case "join": join(); break;
            case "fill": fill(); break;
            case "browse": browse(); break;
            case "probe": probe(); break;
            case "storm": storm(); break;
            case "norm-hold": normHold(); break;
            case "notify-listener": notifyListener(); break;
            case "pull": pull(); break;
            case "txn": txn(); break;
            case "helper-bench": helperBench(); break;
            case "spec": spec(); break;
            case "hold": hold(); break;
            default: System.err.println("unknown mode " + a[0]); System.exit(2);
        }
        Runtime.getRuntime().halt(0);
    }

    static String name(ServiceItem it) {
        for (Entry e : it.attributeSets) if (e instanceof Name) return ((Name) e).name;
        return "-";
    }

    static void cache() throws Exception {
        LookupDiscoveryManager ldm = new LookupDiscoveryManager(new String[0],
            new LookupLocator[] { new LookupLocator(opt("--locator", null)) }, null);
        net.jini.config.Configuration cfg = net.jini.config.ConfigurationProvider.getInstance(new String[] { "-",
            "net.jini.lookup.ServiceDiscoveryManager.eventListenerExporter=new net.jini.jeri.BasicJeriExporter("
                + "net.jini.jeri.tcp.TcpServerEndpoint.getInstance(\"" + opt("--listen-host", null) + "\", 0), new net.jini.jeri.BasicILFactory(), false, false)" });
        ServiceDiscoveryManager sdm = new ServiceDiscoveryManager(ldm, null, cfg);
        LookupCache c = sdm.createLookupCache(new ServiceTemplate(null, new Class[] { Hello.class }, null), null,
            new ServiceDiscoveryListener() {
                public void serviceAdded(ServiceDiscoveryEvent e) { say("added " + e.getPostEventServiceItem().serviceID + " " + name(e.getPostEventServiceItem())); }
                public void serviceChanged(ServiceDiscoveryEvent e) { say("changed " + e.getPostEventServiceItem().serviceID + " " + name(e.getPostEventServiceItem())); }
                public void serviceRemoved(ServiceDiscoveryEvent e) { say("removed " + e.getPreEventServiceItem().serviceID); }
            });
        say("cache ready");
        Thread.sleep(Long.parseLong(opt("--secs", "30")) * 1000);
        say("end");
    }

    static void join() throws Exception {
        String n = opt("--name", "join");
        LookupDiscoveryManager ldm = new LookupDiscoveryManager(new String[0],
            new LookupLocator[] { new LookupLocator(opt("--locator", null)) }, null);
        net.jini.lookup.JoinManager jm = new net.jini.lookup.JoinManager(new HelloProxy(n), new Entry[] { new Name(n) },
            (net.jini.lookup.ServiceIDListener) id -> say("serviceID " + id), ldm, new net.jini.lease.LeaseRenewalManager());
        long change = Long.parseLong(opt("--change-after", "5")), secs = Long.parseLong(opt("--secs", "15"));
        Thread.sleep(change * 1000);
        jm.setAttributes(new Entry[] { new Name(n + "-changed") });
        say("changed");
        Thread.sleep(Math.max(0, secs - change) * 1000);
        jm.terminate();
        say("terminated");
        Thread.sleep(1000);
    }

    static ServiceRegistrar registrar() throws Exception {
        return new LookupLocator(opt("--locator", null)).getRegistrar(20000);
    }

    static void report(String op, long[] ns) {
        long[] s = ns.clone();
        Arrays.sort(s);
        long sum = 0;
        for (long v : s) sum += v;
        say(String.format("bench %s n=%d p50=%d p99=%d mean=%d", op, s.length, s[s.length / 2] / 1000,
            s[Math.min(s.length - 1, (int) (s.length * 0.99))] / 1000, sum / s.length / 1000));
    }

    static void bench() throws Exception {
        int n = Integer.parseInt(opt("--n", "200"));
        ServiceRegistrar reg = registrar();
        // Warm up both sides: class loading, connections.
        for (int i = 0; i < 50; i++) {
            ServiceRegistration r = reg.register(new ServiceItem(null, new HelloProxy("warm"), new Entry[] { new Name("warm") }), 60000);
            reg.lookup(new ServiceTemplate(r.getServiceID(), null, null));
            r.getLease().renew(60000);
            r.getLease().cancel();
        }
        long[] tgroups = new long[n], treg = new long[n], tlook = new long[n], tren = new long[n];
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            reg.getGroups();
            tgroups[i] = System.nanoTime() - t0;
        }
        List<ServiceRegistration> regs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            ServiceRegistration r = reg.register(new ServiceItem(null, new HelloProxy("b" + i), new Entry[] { new Name("bench-" + i) }), 60000);
            treg[i] = System.nanoTime() - t0;
            regs.add(r);
        }
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            Object o = reg.lookup(new ServiceTemplate(regs.get(i).getServiceID(), null, null));
            tlook[i] = System.nanoTime() - t0;
            if (o == null) throw new IllegalStateException("lookup found nothing");
        }
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            regs.get(i).getLease().renew(60000);
            tren[i] = System.nanoTime() - t0;
        }
        report("getGroups", tgroups);
        report("register", treg);
        report("lookup", tlook);
        report("renew", tren);
        for (ServiceRegistration r : regs) r.getLease().cancel();
    }

    static void storm() throws Exception {
        int threads = Integer.parseInt(opt("--threads", "16")), calls = Integer.parseInt(opt("--calls", "100"));
        ServiceRegistrar reg = registrar();
        List<ServiceRegistration> regs = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            regs.add(reg.register(new ServiceItem(null, new HelloProxy("storm" + i), new Entry[] { new Name("storm-" + i) }), 600000));
        }
        java.util.concurrent.CyclicBarrier go = new java.util.concurrent.CyclicBarrier(threads + 1);
        java.util.concurrent.atomic.AtomicInteger ok = new java.util.concurrent.atomic.AtomicInteger(), failed = new java.util.concurrent.atomic.AtomicInteger();
        long[] ns = new long[threads * calls];
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            final int me = i;
            ts[i] = new Thread(() -> {
                try { go.await(); } catch (Exception e) { return; }
                for (int c = 0; c < calls; c++) {
                    long t0 = System.nanoTime();
                    try {
                        regs.get(me).getLease().renew(600000);
                        ok.incrementAndGet();
                    } catch (Exception e) {
                        if (failed.incrementAndGet() <= 5) say("storm-fail " + e);
                    }
                    ns[me * calls + c] = System.nanoTime() - t0;
                }
            });
            ts[i].start();
        }
        go.await();
        long t0 = System.nanoTime();
        for (Thread t : ts) t.join();
        long took = System.nanoTime() - t0;
        long[] s = ns.clone();
        Arrays.sort(s);
        say(String.format("storm threads=%d calls=%d ok=%d failed=%d ms=%d persec=%d p50=%d p99=%d", threads, ns.length, ok.get(), failed.get(),
            took / 1000000, (long) (ns.length / (took / 1e9)), s[s.length / 2] / 1000, s[Math.min(s.length - 1, (int) (s.length * 0.99))] / 1000));
        for (ServiceRegistration r : regs) {
            try { r.getLease().cancel(); } catch (Exception e) { }
        }
    }

    static void fill() throws Exception {
        int n = Integer.parseInt(opt("--n", "1000"));
        ServiceRegistrar reg = registrar();
        List<ServiceRegistration> regs = new ArrayList<>();
        for (int i = 0; i < n; i++)
            regs.add(reg.register(new ServiceItem(null, new HelloProxy("f" + i), new Entry[] { new Name("fill-" + i) }), 600000));
        say("filled " + n);
        Thread.sleep(Long.parseLong(opt("--secs", "10")) * 1000);
        for (ServiceRegistration r : regs) r.getLease().cancel();
    }

    static String names(Class<?>[] cs) {
        if (cs == null) return "null";
        List<String> out = new ArrayList<>();
        for (Class<?> c : cs) out.add(c == null ? "null" : c.getName());
        Collections.sort(out);
        return out.toString();
    }

    static void browse() throws Exception {
        ServiceRegistrar reg = registrar();
        ServiceRegistration a = reg.register(new ServiceItem(null, new HelloProxy("a"), new Entry[] { new Name("browse-a"),
            new net.jini.lookup.entry.ServiceInfo("hello", "example", "example", "1.0", "m", "s1") }), 60000);
        ServiceRegistration b = reg.register(new ServiceItem(null, new HelloProxy("b"), new Entry[] { new Name("browse-b") }), 60000);
        ServiceTemplate all = new ServiceTemplate(null, new Class[] { Hello.class }, null);
        say("browse types-all " + names(reg.getServiceTypes(new ServiceTemplate(null, null, null), "")));
        say("browse types-hello " + names(reg.getServiceTypes(all, "")));
        say("browse types-prefix " + names(reg.getServiceTypes(new ServiceTemplate(null, null, null), "java.")));
        say("browse entries " + names(reg.getEntryClasses(all)));
        say("browse entries-name " + names(reg.getEntryClasses(new ServiceTemplate(null, null, new Entry[] { new Name() }))));
        Object[] vals = reg.getFieldValues(new ServiceTemplate(null, null, new Entry[] { new Name() }), 0, "name");
        List<String> vs = new ArrayList<>();
        if (vals != null) for (Object o : vals) vs.add(String.valueOf(o));
        Collections.sort(vs);
        say("browse names " + (vals == null ? "null" : vs.toString()));
        // modifyAttributes: Name("browse-b") becomes Name("browse-c").
        b.modifyAttributes(new Entry[] { new Name("browse-b") }, new Entry[] { new Name("browse-c") });
        ServiceItem got = (ServiceItem) reg.lookup(new ServiceTemplate(b.getServiceID(), null, null), 1).items[0];
        say("browse modified " + name(got));
        // LeaseMap.cancelAll over both service leases: cancelLeases.
        net.jini.core.lease.LeaseMap m = a.getLease().createLeaseMap(60000);
        m.put(b.getLease(), Long.valueOf(60000));
        m.cancelAll();
        say("browse cancelled-all " + reg.lookup(new ServiceTemplate(null, new Class[] { Hello.class }, null), 10).totalMatches);
    }

    static void probe() throws Exception {
        ServiceRegistrar reg = registrar();
        Field f = reg.getClass().getSuperclass().getDeclaredField("server");
        f.setAccessible(true);
        Object server = f.get(reg);
        BasicInvocationHandler h = (BasicInvocationHandler) Proxy.getInvocationHandler(server);
        BasicObjectEndpoint oe = (BasicObjectEndpoint) h.getObjectEndpoint();
        try {
            RemoteEventListener l = (RemoteEventListener) Proxy.newProxyInstance(JinidPeer.class.getClassLoader(),
                new Class[] { RemoteEventListener.class }, new BasicInvocationHandler(oe, null));
            l.notify(null);
            say("probe unknown-method returned");
        } catch (Throwable t) {
            say("probe unknown-method " + t.getClass().getName() + ": " + t.getMessage());
        }
        try {
            BasicObjectEndpoint other = new BasicObjectEndpoint(oe.getEndpoint(), UuidFactory.generate(), false);
            RemoteEventListener l = (RemoteEventListener) Proxy.newProxyInstance(JinidPeer.class.getClassLoader(),
                new Class[] { RemoteEventListener.class }, new BasicInvocationHandler(other, null));
            l.notify(null);
            say("probe unknown-object returned");
        } catch (Throwable t) {
            say("probe unknown-object " + t.getClass().getName() + ": " + t.getMessage());
        }
    }

    static Object find(String locator, Class<?> type) throws Exception {
        ServiceRegistrar r = new LookupLocator(locator).getRegistrar(20000);
        long end = System.currentTimeMillis() + 30000;
        String sid = opt("--service-id", null);
        ServiceID id = sid == null ? null : new ServiceID(UUID.fromString(sid).getMostSignificantBits(), UUID.fromString(sid).getLeastSignificantBits());
        while (System.currentTimeMillis() < end) {
            Object o = r.lookup(new ServiceTemplate(id, new Class[] { type }, null));
            if (o != null) return o;
            Thread.sleep(500);
        }
        throw new IllegalStateException("no " + type.getName() + " at " + locator);
    }

    static void normHold() throws Exception {
        long lease = Long.parseLong(opt("--lease", "2000")), secs = Long.parseLong(opt("--secs", "25"));
        ServiceRegistrar reggie = registrar();
        net.jini.lease.LeaseRenewalService lrs = (net.jini.lease.LeaseRenewalService) find(opt("--norm-locator", null), net.jini.lease.LeaseRenewalService.class);
        ServiceRegistration r = reggie.register(new ServiceItem(null, new HelloProxy("held"), new Entry[] { new Name("held-by-jinid") }), lease);
        net.jini.lease.LeaseRenewalSet set = lrs.createLeaseRenewalSet(secs * 1000 + 60000);
        set.renewFor(r.getLease(), Lease.FOREVER, lease);
        say("handed " + r.getServiceID());
        int checks = 0, found = 0, renewals = 0;
        long last = -1;
        long end = System.currentTimeMillis() + secs * 1000;
        while (System.currentTimeMillis() < end) {
            Thread.sleep(1000);
            checks++;
            if (reggie.lookup(new ServiceTemplate(r.getServiceID(), null, null)) != null) found++;
            for (Lease l : set.getLeases()) {
                if (last > 0 && l.getExpiration() > last + lease / 4) renewals++;
                last = l.getExpiration();
            }
        }
        say("held checks=" + checks + " found=" + found + " renewals=" + renewals);
        set.remove(r.getLease());
        r.getLease().cancel();
        set.getRenewalSetLease().cancel();
    }

    static void notifyListener() throws Exception {
        byte[] b = Base64.getDecoder().decode(opt("--listener", null));
        java.rmi.MarshalledObject<?> mo = (java.rmi.MarshalledObject<?>) new java.io.ObjectInputStream(new java.io.ByteArrayInputStream(b)).readObject();
        RemoteEventListener l = (RemoteEventListener) mo.get();
        ServiceRegistrar reggie = registrar();
        reggie.notify(new ServiceTemplate(null, new Class[] { Hello.class }, null),
            ServiceRegistrar.TRANSITION_NOMATCH_MATCH | ServiceRegistrar.TRANSITION_MATCH_NOMATCH, l, new java.rmi.MarshalledObject<>("hb-http"), 60000);
        ServiceRegistration r = reggie.register(new ServiceItem(null, new HelloProxy("from-reggie"), new Entry[] { new Name("from-reggie") }), 60000);
        say("registered " + r.getServiceID());
        Thread.sleep(Long.parseLong(opt("--secs", "2")) * 1000);
        r.getLease().cancel();
        say("cancelled");
        Thread.sleep(2000);
    }

    static void pull() throws Exception {
        net.jini.event.PullEventMailbox mb = (net.jini.event.PullEventMailbox) find(opt("--locator", null), net.jini.event.EventMailbox.class);
        net.jini.event.MailboxPullRegistration reg = mb.pullRegister(120000);
        say("registration " + ((net.jini.id.ReferentUuid) reg).getReferentUuid().toString().replace("-", ""));
        net.jini.event.RemoteEventIterator it = reg.getRemoteEvents();
        long end = System.currentTimeMillis() + Long.parseLong(opt("--secs", "20")) * 1000;
        while (System.currentTimeMillis() < end) {
            net.jini.core.event.RemoteEvent e = it.next(Math.max(1, end - System.currentTimeMillis()));
            if (e == null) continue;
            Object hb = e.getRegistrationObject() == null ? null : e.getRegistrationObject().get();
            say("event class=" + e.getClass().getName() + " source=" + e.getSource() + " id=" + e.getID() + " seq=" + e.getSequenceNumber() + " handback=" + hb);
        }
        reg.getLease().cancel();
    }

    static class Participant implements net.jini.core.transaction.server.TransactionParticipant {
        final List<String> calls = new ArrayList<>();
        synchronized void log(String c) { calls.add(c); notifyAll(); }
        public int prepare(net.jini.core.transaction.server.TransactionManager m, long id) throws net.jini.core.transaction.UnknownTransactionException, java.rmi.RemoteException {
            log("prepare:" + m.getState(id));
            return net.jini.core.transaction.server.TransactionConstants.PREPARED;
        }
        public void commit(net.jini.core.transaction.server.TransactionManager m, long id) { log("commit"); }
        public void abort(net.jini.core.transaction.server.TransactionManager m, long id) { log("abort"); }
        public int prepareAndCommit(net.jini.core.transaction.server.TransactionManager m, long id) {
            log("prepareAndCommit");
            return net.jini.core.transaction.server.TransactionConstants.COMMITTED;
        }
    }

    static void txn() throws Exception {
        net.jini.core.transaction.server.TransactionManager mgr =
            (net.jini.core.transaction.server.TransactionManager) find(opt("--locator", null), net.jini.core.transaction.server.TransactionManager.class);
        Participant p = new Participant();
        net.jini.core.transaction.server.TransactionParticipant proxy = (net.jini.core.transaction.server.TransactionParticipant)
            new net.jini.jeri.BasicJeriExporter(net.jini.jeri.tcp.TcpServerEndpoint.getInstance(opt("--listen-host", null), 0),
                new net.jini.jeri.BasicILFactory(), false, true).export(p);
        net.jini.core.transaction.server.ServerTransaction t = (net.jini.core.transaction.server.ServerTransaction)
            net.jini.core.transaction.TransactionFactory.create(mgr, 60000).transaction;
        t.join(proxy, 1);
        say("created " + t.id);
        java.io.File go = new java.io.File(opt("--go-file", null));
        long end = System.currentTimeMillis() + Long.parseLong(opt("--secs", "30")) * 1000;
        while (!go.exists() && System.currentTimeMillis() < end) Thread.sleep(100);
        t.commit();
        synchronized (p) {
            while (!p.calls.contains("commit") && System.currentTimeMillis() < end) p.wait(500);
            say("participant " + p.calls);
        }
    }

    interface Op { void call(int thread, int i) throws Exception; }

    /** Times op from threads threads, calls calls each, all at once; prints its line. */
    static void timed(String service, String name, int threads, int calls, Op op) throws Exception {
        java.util.concurrent.CyclicBarrier go = new java.util.concurrent.CyclicBarrier(threads + 1);
        java.util.concurrent.atomic.AtomicInteger failed = new java.util.concurrent.atomic.AtomicInteger();
        long[] ns = new long[threads * calls];
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            final int me = i;
            ts[i] = new Thread(() -> {
                try { go.await(); } catch (Exception e) { return; }
                for (int c = 0; c < calls; c++) {
                    long t0 = System.nanoTime();
                    try {
                        op.call(me, c);
                    } catch (Exception e) {
                        if (failed.incrementAndGet() <= 3) say("bench-fail " + name + " " + e);
                    }
                    ns[me * calls + c] = System.nanoTime() - t0;
                }
            });
            ts[i].start();
        }
        go.await();
        long t0 = System.nanoTime();
        for (Thread t : ts) t.join();
        long took = System.nanoTime() - t0;
        long[] v = ns.clone();
        Arrays.sort(v);
        say(String.format("bench %s %s threads=%d calls=%d failed=%d persec=%d p50=%d p99=%d", service, name, threads, ns.length, failed.get(),
            (long) (ns.length / (took / 1e9)), v[v.length / 2] / 1000, v[Math.min(v.length - 1, (int) (v.length * 0.99))] / 1000));
    }

    static Object export(java.rmi.Remote o) throws Exception {
        return new net.jini.jeri.BasicJeriExporter(net.jini.jeri.tcp.TcpServerEndpoint.getInstance(opt("--listen-host", null), 0),
            new net.jini.jeri.BasicILFactory(), false, true).export(o);
    }

    static void helperBench() throws Exception {
        String service = opt("--service", "norm");
        int threads = Integer.parseInt(opt("--threads", "1")), calls = Integer.parseInt(opt("--calls", "200"));
        String loc = opt("--locator", null);
        List<Runnable> cleanup = Collections.synchronizedList(new ArrayList<>());
        for (int round = 0; round < 2; round++) { // the first a warm-up, not printed
            boolean print = round == 1;
            int n = print ? calls : Math.max(20, calls / 5);
            switch (service) {
                case "norm": {
                    net.jini.lease.LeaseRenewalService lrs = (net.jini.lease.LeaseRenewalService) find(loc, net.jini.lease.LeaseRenewalService.class);
                    ServiceRegistrar reg = registrar();
                    List<net.jini.lease.LeaseRenewalSet> sets = Collections.synchronizedList(new ArrayList<>());
                    Op create = (th, i) -> sets.add(lrs.createLeaseRenewalSet(600000));
                    ServiceRegistration[] held = new ServiceRegistration[threads];
                    net.jini.lease.LeaseRenewalSet[] mine = new net.jini.lease.LeaseRenewalSet[threads];
                    for (int t = 0; t < threads; t++) {
                        held[t] = reg.register(new ServiceItem(null, new HelloProxy("b" + t), new Entry[] { new Name("bench-" + t) }), 600000);
                        mine[t] = lrs.createLeaseRenewalSet(600000);
                    }
                    Op renewFor = (th, i) -> mine[th].renewFor(held[th].getLease(), Lease.FOREVER, 600000 + i);
                    if (print) timed(service, "createLeaseRenewalSet", threads, n, create); else timed(service, "warm", threads, n, create);
                    if (print) timed(service, "renewFor", threads, n, renewFor); else timed(service, "warm", threads, n, renewFor);
                    for (net.jini.lease.LeaseRenewalSet st : sets) try { st.getRenewalSetLease().cancel(); } catch (Exception e) { }
                    for (int t = 0; t < threads; t++) {
                        try { mine[t].getRenewalSetLease().cancel(); held[t].getLease().cancel(); } catch (Exception e) { }
                    }
                    break;
                }
                case "mercury": {
                    net.jini.event.PullEventMailbox mb = (net.jini.event.PullEventMailbox) find(loc, net.jini.event.EventMailbox.class);
                    List<net.jini.event.MailboxPullRegistration> regs = Collections.synchronizedList(new ArrayList<>());
                    Op register = (th, i) -> regs.add(mb.pullRegister(600000));
                    RemoteEventListener[] ls = new RemoteEventListener[threads];
                    net.jini.event.MailboxPullRegistration[] mine = new net.jini.event.MailboxPullRegistration[threads];
                    for (int t = 0; t < threads; t++) {
                        mine[t] = mb.pullRegister(600000);
                        ls[t] = mine[t].getListener();
                    }
                    java.rmi.MarshalledObject<String> hb = new java.rmi.MarshalledObject<>("hb");
                    Op notify = (th, i) -> ls[th].notify(new net.jini.core.event.RemoteEvent("bench-" + th, 1, i + 1, hb));
                    timed(service, print ? "pullRegister" : "warm", threads, n, register);
                    timed(service, print ? "notify" : "warm", threads, n, notify);
                    for (net.jini.event.MailboxPullRegistration r : regs) try { r.getLease().cancel(); } catch (Exception e) { }
                    for (net.jini.event.MailboxPullRegistration r : mine) try { r.getLease().cancel(); } catch (Exception e) { }
                    break;
                }
                case "fiddler": {
                    net.jini.discovery.LookupDiscoveryService lds = (net.jini.discovery.LookupDiscoveryService) find(loc, net.jini.discovery.LookupDiscoveryService.class);
                    RemoteEventListener l = (RemoteEventListener) export(new RemoteEventListener() { public void notify(net.jini.core.event.RemoteEvent e) { } });
                    List<net.jini.discovery.LookupDiscoveryRegistration> regs = Collections.synchronizedList(new ArrayList<>());
                    Op register = (th, i) -> regs.add(lds.register(new String[0], new LookupLocator[0], l, null, 600000));
                    net.jini.discovery.LookupDiscoveryRegistration[] mine = new net.jini.discovery.LookupDiscoveryRegistration[threads];
                    for (int t = 0; t < threads; t++) mine[t] = lds.register(new String[0], new LookupLocator[0], l, null, 600000);
                    Op get = (th, i) -> mine[th].getRegistrars();
                    timed(service, print ? "register" : "warm", threads, n, register);
                    timed(service, print ? "getRegistrars" : "warm", threads, n, get);
                    for (net.jini.discovery.LookupDiscoveryRegistration r : regs) try { r.getLease().cancel(); } catch (Exception e) { }
                    for (net.jini.discovery.LookupDiscoveryRegistration r : mine) try { r.getLease().cancel(); } catch (Exception e) { }
                    break;
                }
                case "mahalo": {
                    net.jini.core.transaction.server.TransactionManager mgr =
                        (net.jini.core.transaction.server.TransactionManager) find(loc, net.jini.core.transaction.server.TransactionManager.class);
                    Op create = (th, i) -> mgr.create(600000).lease.cancel();
                    Op commit = (th, i) -> ((net.jini.core.transaction.server.ServerTransaction) net.jini.core.transaction.TransactionFactory.create(mgr, 600000).transaction).commit();
                    timed(service, print ? "create+cancel" : "warm", threads, n, create);
                    timed(service, print ? "create+commit" : "warm", threads, n, commit);
                    break;
                }
                default: throw new IllegalArgumentException("service " + service);
            }
        }
    }

    interface Check { String run() throws Exception; }

    static int specOK, specN;

    /** Runs one rule's check: OK with its detail, FAIL with why. */
    static void rule(String name, Check c) {
        specN++;
        try {
            String d = c.run();
            specOK++;
            say("CHECK " + name + " OK " + d);
        } catch (Throwable e) {
            say("CHECK " + name + " FAIL " + e);
        }
    }

    interface Attempt { Object run() throws Exception; }

    /** The class name of what r throws, or "none". */
    static String thrown(Attempt r) {
        try { r.run(); return "none"; } catch (Throwable e) { return e.getClass().getName(); }
    }

    static void expect(String what, Attempt r, Class<?>... want) throws Exception {
        String got = thrown(r);
        for (Class<?> w : want) if (w.getName().equals(got)) return;
        throw new IllegalStateException(what + " threw " + got + ", want " + Arrays.toString(want));
    }

    static void that(boolean ok, String why) { if (!ok) throw new IllegalStateException(why); }

    /** Waits up to 5 s for a discovery registration's groups to be want. */
    static void groupsBecome(net.jini.discovery.LookupDiscoveryRegistration r, Set<String> want) throws Exception {
        long end = System.currentTimeMillis() + 5000;
        Set<String> got;
        while (!(got = new HashSet<>(Arrays.asList(r.getGroups()))).equals(want) && System.currentTimeMillis() < end) Thread.sleep(50);
        that(got.equals(want), "groups " + got + ", want " + want);
    }

    /** A participant whose calls of one kind fail with a RemoteException, fails times, or with e. */
    static class Flaky extends Voter {
        final String op;
        int fails;
        final Exception e;
        Flaky(int vote, String op, int fails, Exception e) { super(vote); this.op = op; this.fails = fails; this.e = e; }
        synchronized void maybeFail(String o) throws java.rmi.RemoteException, net.jini.core.transaction.UnknownTransactionException {
            if (!o.equals(op) || fails == 0) return;
            if (fails > 0) fails--;
            calls.add(o + "-failed");
            if (e instanceof net.jini.core.transaction.UnknownTransactionException) throw (net.jini.core.transaction.UnknownTransactionException) e;
            throw new java.rmi.RemoteException("flaky " + o);
        }
        public int prepare(net.jini.core.transaction.server.TransactionManager m, long id) throws java.rmi.RemoteException, net.jini.core.transaction.UnknownTransactionException { maybeFail("prepare"); return super.prepare(m, id); }
        public void commit(net.jini.core.transaction.server.TransactionManager m, long id) throws java.rmi.RemoteException, net.jini.core.transaction.UnknownTransactionException { maybeFail("commit"); super.commit(m, id); }
    }

    static class Voter implements net.jini.core.transaction.server.TransactionParticipant {
        final int vote;
        final List<String> calls = Collections.synchronizedList(new ArrayList<>());
        Voter(int vote) { this.vote = vote; }
        public int prepare(net.jini.core.transaction.server.TransactionManager m, long id)
            throws java.rmi.RemoteException, net.jini.core.transaction.UnknownTransactionException { calls.add("prepare"); return vote; }
        public void commit(net.jini.core.transaction.server.TransactionManager m, long id)
            throws java.rmi.RemoteException, net.jini.core.transaction.UnknownTransactionException { calls.add("commit"); }
        public void abort(net.jini.core.transaction.server.TransactionManager m, long id) { calls.add("abort"); }
        public int prepareAndCommit(net.jini.core.transaction.server.TransactionManager m, long id) {
            calls.add("prepareAndCommit");
            return vote == net.jini.core.transaction.server.TransactionConstants.PREPARED ? net.jini.core.transaction.server.TransactionConstants.COMMITTED : vote;
        }
    }

    static void spec() throws Exception {
        String service = opt("--service", "norm"), loc = opt("--locator", null);
        RemoteEventListener l = (RemoteEventListener) export(new RemoteEventListener() { public void notify(net.jini.core.event.RemoteEvent e) { } });
        switch (service) {
            case "norm": {
                net.jini.lease.LeaseRenewalService lrs = (net.jini.lease.LeaseRenewalService) find(loc, net.jini.lease.LeaseRenewalService.class);
                ServiceRegistrar reg = registrar();
                ServiceRegistration held = reg.register(new ServiceItem(null, new HelloProxy("spec"), new Entry[] { new Name("spec-lr") }), 60000);
                rule("LR.1 createLeaseRenewalSet(negative) IllegalArgumentException", () -> {
                    expect("createLeaseRenewalSet(-5)", () -> lrs.createLeaseRenewalSet(-5), IllegalArgumentException.class);
                    return "";
                });
                rule("LR.1 createLeaseRenewalSet(ANY) grants a lease", () -> {
                    net.jini.lease.LeaseRenewalSet s = lrs.createLeaseRenewalSet(Lease.ANY);
                    that(s.getRenewalSetLease().getExpiration() > System.currentTimeMillis(), "expired at once");
                    s.getRenewalSetLease().cancel();
                    return "";
                });
                net.jini.lease.LeaseRenewalSet set = lrs.createLeaseRenewalSet(60000);
                rule("LR.1 the set's lease renews", () -> {
                    Lease sl = set.getRenewalSetLease();
                    sl.renew(120000);
                    that(sl.getExpiration() - System.currentTimeMillis() > 60000, "not renewed: " + (sl.getExpiration() - System.currentTimeMillis()));
                    return "";
                });
                rule("LR.2 renewFor(null) NullPointerException", () -> {
                    expect("renewFor(null)", () -> { set.renewFor(null, Lease.FOREVER); return ""; }, NullPointerException.class);
                    return "";
                });
                rule("LR.2 renewFor(the set's own lease) IllegalArgumentException", () -> {
                    expect("renewFor(own)", () -> { set.renewFor(set.getRenewalSetLease(), Lease.FOREVER); return ""; }, IllegalArgumentException.class);
                    return "";
                });
                rule("LR.2 renewFor(renewDuration negative) IllegalArgumentException", () -> {
                    expect("renewFor(-5)", () -> { set.renewFor(held.getLease(), 60000, -5); return ""; }, IllegalArgumentException.class);
                    return "";
                });
                rule("LR.2 renewFor twice keeps one lease", () -> {
                    set.renewFor(held.getLease(), Lease.FOREVER, 30000);
                    set.renewFor(held.getLease(), Lease.FOREVER, 20000);
                    Lease[] in = set.getLeases();
                    that(in.length == 1 && in[0].equals(held.getLease()), "getLeases() " + Arrays.toString(in));
                    return "";
                });
                rule("LR.2 remove of a lease not in the set is null", () -> {
                    ServiceRegistration other = reg.register(new ServiceItem(null, new HelloProxy("o"), new Entry[] { new Name("spec-other") }), 60000);
                    Lease r = set.remove(other.getLease());
                    other.getLease().cancel();
                    that(r == null, "returned " + r);
                    return "";
                });
                rule("LR.2 remove returns the lease", () -> {
                    Lease r = set.remove(held.getLease());
                    that(held.getLease().equals(r) && set.getLeases().length == 0, "returned " + r);
                    return "";
                });
                rule("LR.3 warning registration: EXPIRATION_WARNING_EVENT_ID, the set, its lease", () -> {
                    net.jini.core.event.EventRegistration er = set.setExpirationWarningListener(l, 1000, null);
                    that(er.getID() == net.jini.lease.LeaseRenewalSet.EXPIRATION_WARNING_EVENT_ID, "id " + er.getID());
                    that(set.equals(er.getSource()), "source " + er.getSource());
                    that(set.getRenewalSetLease().equals(er.getLease()), "lease " + er.getLease());
                    return "seq=" + er.getSequenceNumber();
                });
                rule("LR.3 warning with negative minWarning IllegalArgumentException", () -> {
                    expect("minWarning -5", () -> set.setExpirationWarningListener(l, -5, null), IllegalArgumentException.class);
                    return "";
                });
                rule("LR.3 failure registration: RENEWAL_FAILURE_EVENT_ID", () -> {
                    net.jini.core.event.EventRegistration er = set.setRenewalFailureListener(l, null);
                    that(er.getID() == net.jini.lease.LeaseRenewalSet.RENEWAL_FAILURE_EVENT_ID, "id " + er.getID());
                    return "";
                });
                rule("LR.3 listeners cleared", () -> {
                    set.clearExpirationWarningListener();
                    set.clearRenewalFailureListener();
                    return "";
                });
                rule("LR.1 the set's lease renews in a batch (LeaseMap)", () -> {
                    net.jini.core.lease.LeaseMap m = set.getRenewalSetLease().createLeaseMap(90000);
                    m.renewAll();
                    that(set.getRenewalSetLease().getExpiration() > System.currentTimeMillis(), "expired");
                    return "";
                });
                rule("LR.2 an empty set's getLeases is empty", () -> {
                    that(set.getLeases().length == 0, Arrays.toString(set.getLeases()));
                    return "";
                });
                rule("LR.1 a cancelled set is gone", () -> {
                    set.getRenewalSetLease().cancel();
                    expect("getLeases", () -> set.getLeases(), java.rmi.NoSuchObjectException.class);
                    expect("renewFor", () -> { set.renewFor(held.getLease(), Lease.FOREVER); return ""; }, java.rmi.NoSuchObjectException.class);
                    expect("renew its lease", () -> { set.getRenewalSetLease().renew(1000); return ""; }, net.jini.core.lease.UnknownLeaseException.class);
                    return "";
                });
                rule("LR.1 cancelling a set's lease twice UnknownLeaseException", () -> {
                    net.jini.lease.LeaseRenewalSet s2 = lrs.createLeaseRenewalSet(60000);
                    s2.getRenewalSetLease().cancel();
                    expect("cancel", () -> { s2.getRenewalSetLease().cancel(); return ""; }, net.jini.core.lease.UnknownLeaseException.class);
                    return "";
                });
                rule("LR.1 a set whose lease ran out is gone", () -> {
                    net.jini.lease.LeaseRenewalSet s2 = lrs.createLeaseRenewalSet(1000);
                    Thread.sleep(2500);
                    expect("getLeases", () -> s2.getLeases(), java.rmi.NoSuchObjectException.class);
                    return "";
                });
                rule("LR.1 the set's lease renews for ANY", () -> {
                    net.jini.lease.LeaseRenewalSet s2 = lrs.createLeaseRenewalSet(60000);
                    s2.getRenewalSetLease().renew(Lease.ANY);
                    that(s2.getRenewalSetLease().getExpiration() > System.currentTimeMillis(), "expired");
                    s2.getRenewalSetLease().cancel();
                    return "";
                });
                rule("LR.2 renewFor(FOREVER, ANY) is taken", () -> {
                    net.jini.lease.LeaseRenewalSet s2 = lrs.createLeaseRenewalSet(60000);
                    ServiceRegistration h2 = reg.register(new ServiceItem(null, new HelloProxy("any"), new Entry[] { new Name("spec-any") }), 60000);
                    s2.renewFor(h2.getLease(), Lease.FOREVER, Lease.ANY);
                    int n = s2.getLeases().length;
                    s2.getRenewalSetLease().cancel();
                    h2.getLease().cancel();
                    that(n == 1, n + " leases");
                    return "";
                });
                rule("LR.2 a removed lease can be put back", () -> {
                    net.jini.lease.LeaseRenewalSet s2 = lrs.createLeaseRenewalSet(60000);
                    ServiceRegistration h2 = reg.register(new ServiceItem(null, new HelloProxy("back"), new Entry[] { new Name("spec-back") }), 60000);
                    s2.renewFor(h2.getLease(), Lease.FOREVER, 30000);
                    s2.remove(h2.getLease());
                    s2.renewFor(h2.getLease(), Lease.FOREVER, 30000);
                    int n = s2.getLeases().length;
                    s2.getRenewalSetLease().cancel();
                    h2.getLease().cancel();
                    that(n == 1, n + " leases");
                    return "";
                });
                rule("LR.3 a second warning listener replaces the first", () -> {
                    net.jini.lease.LeaseRenewalSet s2 = lrs.createLeaseRenewalSet(60000);
                    net.jini.core.event.EventRegistration a = s2.setExpirationWarningListener(l, 1000, null);
                    net.jini.core.event.EventRegistration b = s2.setExpirationWarningListener(l, 2000, null);
                    s2.getRenewalSetLease().cancel();
                    that(a.getID() == b.getID(), "ids " + a.getID() + " and " + b.getID());
                    return "";
                });
                rule("LR.3 the warning comes minWarning before the set's end", () -> {
                    net.jini.lease.LeaseRenewalSet s2 = lrs.createLeaseRenewalSet(4000);
                    List<net.jini.core.event.RemoteEvent> got = Collections.synchronizedList(new ArrayList<>());
                    RemoteEventListener w = (RemoteEventListener) export(new RemoteEventListener() { public void notify(net.jini.core.event.RemoteEvent e) { got.add(e); } });
                    s2.setExpirationWarningListener(w, 2000, new java.rmi.MarshalledObject<>("w"));
                    long end = System.currentTimeMillis() + 8000;
                    while (got.isEmpty() && System.currentTimeMillis() < end) Thread.sleep(50);
                    that(got.size() == 1, got.size() + " warnings");
                    net.jini.core.event.RemoteEvent e = got.get(0);
                    that(e instanceof net.jini.lease.ExpirationWarningEvent && e.getID() == net.jini.lease.LeaseRenewalSet.EXPIRATION_WARNING_EVENT_ID
                        && e.getSequenceNumber() > 0 && s2.equals(e.getSource()) && "w".equals(e.getRegistrationObject().get()), "event " + e);
                    return "";
                });
                held.getLease().cancel();
                break;
            }
            case "mercury": {
                net.jini.event.PullEventMailbox mb = (net.jini.event.PullEventMailbox) find(loc, net.jini.event.EventMailbox.class);
                rule("EM.2 register(negative) IllegalArgumentException", () -> {
                    expect("register(-5)", () -> mb.register(-5), IllegalArgumentException.class);
                    return "";
                });
                rule("EM.2 pullRegister(ANY) grants a lease", () -> {
                    net.jini.event.MailboxPullRegistration a = mb.pullRegister(Lease.ANY);
                    that(a.getLease().getExpiration() > System.currentTimeMillis(), "expired at once");
                    a.getLease().cancel();
                    return "";
                });
                rule("EM.2 a registration's lease renews in a batch (LeaseMap)", () -> {
                    net.jini.event.MailboxPullRegistration a = mb.pullRegister(60000), b = mb.pullRegister(60000);
                    net.jini.core.lease.LeaseMap m = a.getLease().createLeaseMap(90000);
                    that(m.canContainKey(b.getLease()), "the two leases do not batch");
                    m.put(b.getLease(), 90000L);
                    m.renewAll();
                    a.getLease().cancel();
                    b.getLease().cancel();
                    return "";
                });
                net.jini.event.MailboxPullRegistration r = mb.pullRegister(60000);
                RemoteEventListener ml = r.getListener();
                rule("EM.3 an empty mailbox's iterator has nothing", () -> {
                    that(r.getRemoteEvents().next(0) == null, "an event");
                    return "";
                });
                rule("EM.3 events come out in the order they came in", () -> {
                    for (int i = 1; i <= 3; i++) ml.notify(new net.jini.core.event.RemoteEvent("spec", 5, i, (java.rmi.MarshalledObject) null));
                    net.jini.event.RemoteEventIterator it = r.getRemoteEvents();
                    for (int i = 1; i <= 3; i++) {
                        net.jini.core.event.RemoteEvent e = it.next(5000);
                        that(e != null && e.getSequenceNumber() == i, "event " + i + ": " + (e == null ? null : e.getSequenceNumber()));
                    }
                    that(it.next(0) == null, "a fourth");
                    return "";
                });
                rule("EM.3 a new iterator invalidates the old one", () -> {
                    net.jini.event.RemoteEventIterator a = r.getRemoteEvents();
                    r.getRemoteEvents();
                    expect("old next", () -> a.next(0), net.jini.event.InvalidIteratorException.class);
                    return "";
                });
                rule("EM.3 a closed iterator is invalid", () -> {
                    net.jini.event.RemoteEventIterator a = r.getRemoteEvents();
                    a.close();
                    expect("next after close", () -> a.next(0), net.jini.event.InvalidIteratorException.class);
                    return "";
                });
                rule("EM.3 addUnknownEvents: that kind is refused", () -> {
                    net.jini.core.event.RemoteEvent u = new net.jini.core.event.RemoteEvent("spec-unknown", 9, 1, (java.rmi.MarshalledObject) null);
                    r.addUnknownEvents(Collections.singleton(u));
                    expect("notify", () -> { ml.notify(new net.jini.core.event.RemoteEvent("spec-unknown", 9, 2, (java.rmi.MarshalledObject) null)); return ""; },
                        net.jini.core.event.UnknownEventException.class);
                    ml.notify(new net.jini.core.event.RemoteEvent("spec-unknown", 10, 1, (java.rmi.MarshalledObject) null)); // another ID is taken
                    return "";
                });
                rule("EM.4.1 delivery to the mailbox's own listener IllegalArgumentException", () -> {
                    expect("enableDelivery(own)", () -> { r.enableDelivery(ml); return ""; }, IllegalArgumentException.class);
                    return "";
                });
                rule("EM.4 enableDelivery(null) disables delivery", () -> {
                    net.jini.event.MailboxPullRegistration a = mb.pullRegister(60000);
                    List<net.jini.core.event.RemoteEvent> got = Collections.synchronizedList(new ArrayList<>());
                    RemoteEventListener target = (RemoteEventListener) export(new RemoteEventListener() { public void notify(net.jini.core.event.RemoteEvent e) { got.add(e); } });
                    a.enableDelivery(target);
                    a.enableDelivery(null);
                    a.getListener().notify(new net.jini.core.event.RemoteEvent("off", 3, 1, (java.rmi.MarshalledObject) null));
                    net.jini.core.event.RemoteEvent e = a.getRemoteEvents().next(5000);
                    a.getLease().cancel();
                    that(e != null && got.isEmpty(), "stored " + (e != null) + ", pushed " + got.size());
                    return "";
                });
                rule("EM.3 the same event twice is stored twice", () -> {
                    net.jini.event.MailboxPullRegistration a = mb.pullRegister(60000);
                    net.jini.core.event.RemoteEvent e = new net.jini.core.event.RemoteEvent("twice", 1, 1, (java.rmi.MarshalledObject) null);
                    a.getListener().notify(e);
                    a.getListener().notify(e);
                    net.jini.event.RemoteEventIterator it = a.getRemoteEvents();
                    int n = 0;
                    while (it.next(1000) != null) n++;
                    a.getLease().cancel();
                    that(n == 2, n + " events");
                    return "";
                });
                rule("EM.3 addUnknownEvents of nothing is fine", () -> {
                    r.addUnknownEvents(Collections.emptyList());
                    return "";
                });
                rule("EM.2 a registration whose lease ran out is gone", () -> {
                    net.jini.event.MailboxPullRegistration a = mb.pullRegister(1000);
                    RemoteEventListener al = a.getListener();
                    Thread.sleep(2500);
                    expect("notify", () -> { al.notify(new net.jini.core.event.RemoteEvent("late", 1, 1, (java.rmi.MarshalledObject) null)); return ""; },
                        java.rmi.NoSuchObjectException.class);
                    return "";
                });
                rule("EM.4 delivery enabled pushes what is stored", () -> {
                    net.jini.event.MailboxPullRegistration a = mb.pullRegister(60000);
                    a.getListener().notify(new net.jini.core.event.RemoteEvent("push", 2, 1, (java.rmi.MarshalledObject) null));
                    List<net.jini.core.event.RemoteEvent> got = Collections.synchronizedList(new ArrayList<>());
                    RemoteEventListener target = (RemoteEventListener) export(new RemoteEventListener() { public void notify(net.jini.core.event.RemoteEvent e) { got.add(e); } });
                    a.enableDelivery(target);
                    long end = System.currentTimeMillis() + 10000;
                    while (got.isEmpty() && System.currentTimeMillis() < end) Thread.sleep(50);
                    a.getLease().cancel();
                    that(got.size() == 1 && got.get(0).getSequenceNumber() == 1, "pushed " + got.size());
                    return "";
                });
                rule("EM.3 getRemoteEvents disables delivery", () -> {
                    net.jini.event.MailboxPullRegistration a = mb.pullRegister(60000);
                    List<net.jini.core.event.RemoteEvent> got = Collections.synchronizedList(new ArrayList<>());
                    RemoteEventListener target = (RemoteEventListener) export(new RemoteEventListener() { public void notify(net.jini.core.event.RemoteEvent e) { got.add(e); } });
                    a.enableDelivery(target);
                    net.jini.event.RemoteEventIterator it = a.getRemoteEvents();
                    a.getListener().notify(new net.jini.core.event.RemoteEvent("pull", 4, 1, (java.rmi.MarshalledObject) null));
                    net.jini.core.event.RemoteEvent e = it.next(5000);
                    a.getLease().cancel();
                    that(e != null && got.isEmpty(), "pulled " + (e != null) + ", pushed " + got.size());
                    return "";
                });
                rule("EM.3 getRemoteEvents clears the unknown events", () -> {
                    net.jini.event.MailboxPullRegistration a = mb.pullRegister(60000);
                    net.jini.core.event.RemoteEvent u = new net.jini.core.event.RemoteEvent("clear", 6, 1, (java.rmi.MarshalledObject) null);
                    a.addUnknownEvents(Collections.singleton(u));
                    a.getRemoteEvents();
                    a.getListener().notify(new net.jini.core.event.RemoteEvent("clear", 6, 2, (java.rmi.MarshalledObject) null));
                    a.getLease().cancel();
                    return "";
                });
                rule("EM.3 an event comes back with its source, IDs and handback", () -> {
                    net.jini.event.MailboxPullRegistration a = mb.pullRegister(60000);
                    a.getListener().notify(new net.jini.core.event.RemoteEvent("round", 77, 9, new java.rmi.MarshalledObject<>("hb-round")));
                    net.jini.core.event.RemoteEvent e = a.getRemoteEvents().next(5000);
                    a.getLease().cancel();
                    that(e != null && "round".equals(e.getSource()) && e.getID() == 77 && e.getSequenceNumber() == 9
                        && "hb-round".equals(e.getRegistrationObject().get()), "got " + e);
                    return "";
                });
                rule("EM.2 each registration has its own events", () -> {
                    net.jini.event.MailboxPullRegistration a = mb.pullRegister(60000), b = mb.pullRegister(60000);
                    a.getListener().notify(new net.jini.core.event.RemoteEvent("own", 1, 1, (java.rmi.MarshalledObject) null));
                    net.jini.core.event.RemoteEvent eb = b.getRemoteEvents().next(1000), ea = a.getRemoteEvents().next(5000);
                    a.getLease().cancel();
                    b.getLease().cancel();
                    that(eb == null && ea != null, "a " + (ea != null) + ", b " + (eb != null));
                    return "";
                });
                rule("EM.3 next(negative) IllegalArgumentException", () -> {
                    net.jini.event.MailboxPullRegistration a = mb.pullRegister(60000);
                    net.jini.event.RemoteEventIterator it = a.getRemoteEvents();
                    expect("next(-1)", () -> it.next(-1), IllegalArgumentException.class);
                    a.getLease().cancel();
                    return "";
                });
                rule("EM.2 register(ANY) grants a lease", () -> {
                    net.jini.event.MailboxRegistration a = mb.register(Lease.ANY);
                    that(a.getLease().getExpiration() > System.currentTimeMillis(), "expired at once");
                    a.getLease().cancel();
                    return "";
                });
                rule("EM.2 a registration's lease renews", () -> {
                    net.jini.event.MailboxPullRegistration a = mb.pullRegister(30000);
                    a.getLease().renew(120000);
                    that(a.getLease().getExpiration() - System.currentTimeMillis() > 60000, "not renewed");
                    a.getLease().cancel();
                    return "";
                });
                rule("EM.3 an iterator of a cancelled registration NoSuchObjectException", () -> {
                    net.jini.event.MailboxPullRegistration a = mb.pullRegister(60000);
                    net.jini.event.RemoteEventIterator it = a.getRemoteEvents();
                    a.getLease().cancel();
                    expect("next", () -> it.next(0), java.rmi.NoSuchObjectException.class, net.jini.event.InvalidIteratorException.class);
                    return "";
                });
                rule("EM.2 a cancelled registration is gone", () -> {
                    Lease ls = r.getLease();
                    ls.cancel();
                    expect("notify", () -> { ml.notify(new net.jini.core.event.RemoteEvent("spec", 5, 9, (java.rmi.MarshalledObject) null)); return ""; }, java.rmi.NoSuchObjectException.class);
                    expect("getRemoteEvents", () -> r.getRemoteEvents(), java.rmi.NoSuchObjectException.class);
                    expect("renew", () -> { ls.renew(1000); return ""; }, net.jini.core.lease.UnknownLeaseException.class);
                    return "";
                });
                break;
            }
            case "fiddler": {
                net.jini.discovery.LookupDiscoveryService lds = (net.jini.discovery.LookupDiscoveryService) find(loc, net.jini.discovery.LookupDiscoveryService.class);
                rule("LD.2 register(null listener) NullPointerException", () -> {
                    expect("register", () -> lds.register(new String[0], new LookupLocator[0], null, null, 60000), NullPointerException.class);
                    return "";
                });
                rule("LD.2 register(negative lease) IllegalArgumentException", () -> {
                    expect("register", () -> lds.register(new String[0], new LookupLocator[0], l, null, -5), IllegalArgumentException.class);
                    return "";
                });
                rule("LD.2 ALL_GROUPS reads back as null", () -> {
                    net.jini.discovery.LookupDiscoveryRegistration r = lds.register(null, new LookupLocator[0], l, null, 60000);
                    String[] g = r.getGroups();
                    r.getLease().cancel();
                    that(g == null, "getGroups() " + Arrays.toString(g));
                    return "";
                });
                rule("LD.3 addGroups or removeGroups on ALL_GROUPS UnsupportedOperationException", () -> {
                    net.jini.discovery.LookupDiscoveryRegistration a = lds.register(null, new LookupLocator[0], l, null, 60000);
                    expect("addGroups", () -> { a.addGroups(new String[] { "x" }); return ""; }, UnsupportedOperationException.class);
                    expect("removeGroups", () -> { a.removeGroups(new String[] { "x" }); return ""; }, UnsupportedOperationException.class);
                    a.getLease().cancel();
                    return "";
                });
                rule("LD.2 NO_GROUPS and no locators discover nothing", () -> {
                    net.jini.discovery.LookupDiscoveryRegistration a = lds.register(new String[0], new LookupLocator[0], l, null, 60000);
                    Thread.sleep(1000);
                    int n = a.getRegistrars().length;
                    a.getLease().cancel();
                    that(n == 0, n + " registrars");
                    return "";
                });
                rule("LD.2 leases renew in a batch (LeaseMap)", () -> {
                    net.jini.discovery.LookupDiscoveryRegistration a = lds.register(new String[0], new LookupLocator[0], l, null, 60000);
                    net.jini.discovery.LookupDiscoveryRegistration b = lds.register(new String[0], new LookupLocator[0], l, null, 60000);
                    net.jini.core.lease.LeaseMap m = a.getLease().createLeaseMap(90000);
                    that(m.canContainKey(b.getLease()), "the two leases do not batch");
                    m.put(b.getLease(), 90000L);
                    m.renewAll();
                    m.cancelAll();
                    expect("renew after cancelAll", () -> { a.getLease().renew(1000); return ""; }, net.jini.core.lease.UnknownLeaseException.class);
                    return "";
                });
                rule("LD.2 a registration whose lease ran out is gone", () -> {
                    net.jini.discovery.LookupDiscoveryRegistration a = lds.register(new String[0], new LookupLocator[0], l, null, 1000);
                    Thread.sleep(2500);
                    expect("getGroups", () -> a.getGroups(), java.rmi.NoSuchObjectException.class);
                    return "";
                });
                rule("LD.3 removing a group not there is fine", () -> {
                    net.jini.discovery.LookupDiscoveryRegistration a = lds.register(new String[] { "spec-x" }, new LookupLocator[0], l, null, 60000);
                    a.removeGroups(new String[] { "spec-not-there" });
                    groupsBecome(a, Set.of("spec-x"));
                    a.getLease().cancel();
                    return "";
                });
                rule("LD.3 locators added once", () -> {
                    net.jini.discovery.LookupDiscoveryRegistration a = lds.register(new String[0], new LookupLocator[0], l, null, 60000);
                    LookupLocator x = new LookupLocator("jini://198.51.100.8:4160");
                    a.addLocators(new LookupLocator[] { x });
                    a.addLocators(new LookupLocator[] { x });
                    long end = System.currentTimeMillis() + 5000;
                    while (a.getLocators().length != 1 && System.currentTimeMillis() < end) Thread.sleep(50);
                    int n = a.getLocators().length;
                    a.getLease().cancel();
                    that(n == 1, n + " locators");
                    return "";
                });
                rule("LD.3 discard of a lookup service not held is ignored", () -> {
                    net.jini.discovery.LookupDiscoveryRegistration a = lds.register(new String[0], new LookupLocator[0], l, null, 60000);
                    a.discard(registrar());
                    a.getLease().cancel();
                    return "";
                });
                rule("LD.2 the lease renews and ends", () -> {
                    net.jini.discovery.LookupDiscoveryRegistration a = lds.register(new String[0], new LookupLocator[0], l, null, 60000);
                    a.getLease().renew(120000);
                    that(a.getLease().getExpiration() - System.currentTimeMillis() > 60000, "not renewed");
                    a.getLease().cancel();
                    expect("cancel twice", () -> { a.getLease().cancel(); return ""; }, net.jini.core.lease.UnknownLeaseException.class);
                    return "";
                });
                rule("LD.2 register(ANY lease) grants one", () -> {
                    net.jini.discovery.LookupDiscoveryRegistration a = lds.register(new String[0], new LookupLocator[0], l, null, Lease.ANY);
                    that(a.getLease().getExpiration() > System.currentTimeMillis(), "expired at once");
                    a.getLease().cancel();
                    return "";
                });
                rule("LD.3 setLocators replaces them", () -> {
                    LookupLocator x = new LookupLocator("jini://198.51.100.11:4160"), y = new LookupLocator("jini://198.51.100.12:4160");
                    net.jini.discovery.LookupDiscoveryRegistration a = lds.register(new String[0], new LookupLocator[] { x }, l, null, 60000);
                    a.setLocators(new LookupLocator[] { y });
                    long end = System.currentTimeMillis() + 5000;
                    while (!(a.getLocators().length == 1 && a.getLocators()[0].equals(y)) && System.currentTimeMillis() < end) Thread.sleep(50);
                    LookupLocator[] got = a.getLocators();
                    a.getLease().cancel();
                    that(got.length == 1 && got[0].equals(y), Arrays.toString(got));
                    return "";
                });
                rule("LD.3 groups added twice are there once", () -> {
                    net.jini.discovery.LookupDiscoveryRegistration a = lds.register(new String[] { "spec-once" }, new LookupLocator[0], l, null, 60000);
                    a.addGroups(new String[] { "spec-once", "spec-two" });
                    groupsBecome(a, Set.of("spec-once", "spec-two"));
                    int n = a.getGroups().length;
                    a.getLease().cancel();
                    that(n == 2, n + " groups");
                    return "";
                });
                rule("LD.2 a lease that ran out does not renew", () -> {
                    net.jini.discovery.LookupDiscoveryRegistration a = lds.register(new String[0], new LookupLocator[0], l, null, 1000);
                    Thread.sleep(2500);
                    expect("renew", () -> { a.getLease().renew(60000); return ""; }, net.jini.core.lease.UnknownLeaseException.class);
                    return "";
                });
                rule("LD.2 locators registered read back", () -> {
                    LookupLocator x = new LookupLocator("jini://198.51.100.9:4160");
                    net.jini.discovery.LookupDiscoveryRegistration a = lds.register(new String[0], new LookupLocator[] { x }, l, null, 60000);
                    LookupLocator[] got = a.getLocators();
                    a.getLease().cancel();
                    that(got.length == 1 && got[0].equals(x), Arrays.toString(got));
                    return "";
                });
                rule("LD.3 removing a locator not there is fine", () -> {
                    net.jini.discovery.LookupDiscoveryRegistration a = lds.register(new String[0], new LookupLocator[0], l, null, 60000);
                    a.removeLocators(new LookupLocator[] { new LookupLocator("jini://198.51.100.10:4160") });
                    a.getLease().cancel();
                    return "";
                });
                rule("LD.2 registrations have event registrations of their own", () -> {
                    net.jini.discovery.LookupDiscoveryRegistration a = lds.register(new String[0], new LookupLocator[0], l, null, 60000);
                    net.jini.discovery.LookupDiscoveryRegistration b = lds.register(new String[0], new LookupLocator[0], l, null, 60000);
                    long ia = a.getEventRegistration().getID(), ib = b.getEventRegistration().getID();
                    a.getLease().cancel();
                    b.getLease().cancel();
                    that(ia != ib, "both " + ia);
                    return "";
                });
                rule("LD.2 a handback comes with the event registration's events", () -> {
                    net.jini.discovery.LookupDiscoveryRegistration a = lds.register(new String[0], new LookupLocator[0], l, new java.rmi.MarshalledObject<>("hb"), 60000);
                    that(a.getEventRegistration().getSource() != null, "no source");
                    a.getLease().cancel();
                    return "";
                });
                net.jini.discovery.LookupDiscoveryRegistration r = lds.register(new String[] { "spec-a", "spec-b" }, new LookupLocator[0], l, null, 60000);
                rule("LD.3 groups read back", () -> {
                    that(new HashSet<>(Arrays.asList(r.getGroups())).equals(Set.of("spec-a", "spec-b")), Arrays.toString(r.getGroups()));
                    return "";
                });
                rule("LD.3 groups added, removed, set", () -> {
                    // Fiddler applies a change a moment after the call returns.
                    r.addGroups(new String[] { "spec-c" });
                    groupsBecome(r, Set.of("spec-a", "spec-b", "spec-c"));
                    r.removeGroups(new String[] { "spec-a" });
                    groupsBecome(r, Set.of("spec-b", "spec-c"));
                    r.setGroups(new String[0]);
                    groupsBecome(r, Set.of());
                    return "";
                });
                rule("LD.3 setGroups(ALL_GROUPS) reads back as null", () -> {
                    r.setGroups(null);
                    long end = System.currentTimeMillis() + 5000; // Fiddler applies it a moment later
                    while (r.getGroups() != null && System.currentTimeMillis() < end) Thread.sleep(50);
                    that(r.getGroups() == null, Arrays.toString(r.getGroups()));
                    r.setGroups(new String[0]);
                    return "";
                });
                rule("LD.3 locators set and read back", () -> {
                    LookupLocator x = new LookupLocator("jini://198.51.100.7:4160");
                    r.setLocators(new LookupLocator[] { x });
                    LookupLocator[] got = r.getLocators();
                    that(got.length == 1 && got[0].equals(x), Arrays.toString(got));
                    r.removeLocators(new LookupLocator[] { x });
                    that(r.getLocators().length == 0, "after remove " + Arrays.toString(r.getLocators()));
                    return "";
                });
                rule("LD.2 the event registration", () -> {
                    net.jini.core.event.EventRegistration er = r.getEventRegistration();
                    that(er.getLease().equals(r.getLease()), "its lease is not the registration's");
                    return "id=" + er.getID();
                });
                rule("LD.2 a cancelled registration is gone", () -> {
                    Lease ls = r.getLease();
                    ls.cancel();
                    expect("getGroups", () -> r.getGroups(), java.rmi.NoSuchObjectException.class);
                    expect("renew", () -> { ls.renew(1000); return ""; }, net.jini.core.lease.UnknownLeaseException.class);
                    return "";
                });
                break;
            }
            case "mahalo": {
                net.jini.core.transaction.server.TransactionManager mgr =
                    (net.jini.core.transaction.server.TransactionManager) find(loc, net.jini.core.transaction.server.TransactionManager.class);
                int P = net.jini.core.transaction.server.TransactionConstants.PREPARED;
                rule("TX.2.5 create(negative) IllegalArgumentException", () -> {
                    expect("create(-5)", () -> mgr.create(-5), IllegalArgumentException.class);
                    return "";
                });
                rule("TX.2.7 a new transaction is ACTIVE", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    int st = mgr.getState(c.id);
                    mgr.abort(c.id);
                    that(st == net.jini.core.transaction.server.TransactionConstants.ACTIVE, "state " + st);
                    return "";
                });
                rule("TX.2.7 an unknown transaction", () -> {
                    expect("getState", () -> mgr.getState(0x5eed5eed5eedL), net.jini.core.transaction.UnknownTransactionException.class);
                    return "";
                });
                rule("TX.2.7 commit of an unknown transaction UnknownTransactionException", () -> {
                    expect("commit", () -> { mgr.commit(0x5eed5eed5eedL); return ""; }, net.jini.core.transaction.UnknownTransactionException.class);
                    return "";
                });
                rule("TX.2.5 cancelling a transaction's lease aborts it", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    Voter v = new Voter(P);
                    mgr.join(c.id, (net.jini.core.transaction.server.TransactionParticipant) export(v), 1);
                    c.lease.cancel();
                    long end = System.currentTimeMillis() + 10000;
                    while (!v.calls.contains("abort") && System.currentTimeMillis() < end) Thread.sleep(50);
                    that(v.calls.equals(List.of("abort")), "the participant heard " + v.calls);
                    expect("commit", () -> { mgr.commit(c.id); return ""; }, net.jini.core.transaction.CannotCommitException.class,
                        net.jini.core.transaction.UnknownTransactionException.class);
                    return "";
                });
                rule("TX.2.5 join(null) NullPointerException", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    expect("join(null)", () -> { mgr.join(c.id, null, 1); return ""; }, NullPointerException.class);
                    mgr.abort(c.id);
                    return "";
                });
                rule("TX.2.7 an aborted transaction aborts again quietly", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    mgr.abort(c.id);
                    String got = thrown(() -> { mgr.abort(c.id); return ""; });
                    that(got.equals("none") || got.equals("net.jini.core.transaction.UnknownTransactionException"), "threw " + got);
                    return got;
                });
                rule("TX.2.7 a committed transaction commits again quietly", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    mgr.commit(c.id);
                    String got = thrown(() -> { mgr.commit(c.id); return ""; });
                    that(got.equals("none") || got.equals("net.jini.core.transaction.UnknownTransactionException"), "threw " + got);
                    return got;
                });
                rule("TX.2.5 a transaction's lease renews; after commit it is gone", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    c.lease.renew(120000);
                    that(c.lease.getExpiration() - System.currentTimeMillis() > 60000, "not renewed");
                    mgr.commit(c.id);
                    expect("renew after commit", () -> { c.lease.renew(1000); return ""; }, net.jini.core.lease.UnknownLeaseException.class);
                    return "";
                });
                rule("TX.2.7 getState after abort: ABORTED or forgotten", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    mgr.abort(c.id);
                    try {
                        int st = mgr.getState(c.id);
                        that(st == net.jini.core.transaction.server.TransactionConstants.ABORTED, "state " + st);
                        return "ABORTED";
                    } catch (net.jini.core.transaction.UnknownTransactionException e) {
                        return "forgotten";
                    }
                });
                rule("TX.2.5 create(ANY) grants a lease", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(Lease.ANY);
                    that(c.lease.getExpiration() > System.currentTimeMillis(), "expired at once");
                    mgr.abort(c.id);
                    return "";
                });
                rule("TX.2.8 three prepared participants all commit", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    Voter[] vs = { new Voter(P), new Voter(P), new Voter(P) };
                    for (Voter v : vs) mgr.join(c.id, (net.jini.core.transaction.server.TransactionParticipant) export(v), 1);
                    mgr.commit(c.id, 10000);
                    for (Voter v : vs) that(v.calls.equals(List.of("prepare", "commit")), "heard " + v.calls);
                    return "";
                });
                rule("TX.2.5 a participant joined twice is called once", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    Voter v = new Voter(P), w = new Voter(P);
                    net.jini.core.transaction.server.TransactionParticipant pv = (net.jini.core.transaction.server.TransactionParticipant) export(v);
                    mgr.join(c.id, pv, 1);
                    mgr.join(c.id, pv, 1);
                    mgr.join(c.id, (net.jini.core.transaction.server.TransactionParticipant) export(w), 1);
                    mgr.commit(c.id, 10000);
                    that(v.calls.equals(List.of("prepare", "commit")), "heard " + v.calls);
                    return "";
                });
                rule("TX.2.8 the one participant voting ABORTED: CannotCommitException", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    mgr.join(c.id, (net.jini.core.transaction.server.TransactionParticipant) export(new Voter(net.jini.core.transaction.server.TransactionConstants.ABORTED)), 1);
                    expect("commit", () -> { mgr.commit(c.id); return ""; }, net.jini.core.transaction.CannotCommitException.class);
                    return "";
                });
                rule("TX.2.8 abort with waitFor returns once participants are told", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    Voter v = new Voter(P);
                    mgr.join(c.id, (net.jini.core.transaction.server.TransactionParticipant) export(v), 1);
                    mgr.abort(c.id, 10000);
                    that(v.calls.equals(List.of("abort")), "heard " + v.calls);
                    return "";
                });
                rule("TX.2.7 commit with waitFor of an aborted transaction CannotCommitException", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    mgr.abort(c.id);
                    expect("commit", () -> { mgr.commit(c.id, 1000); return ""; }, net.jini.core.transaction.CannotCommitException.class,
                        net.jini.core.transaction.UnknownTransactionException.class);
                    return "";
                });
                rule("TX.2.7 abort of an unknown transaction UnknownTransactionException", () -> {
                    expect("abort", () -> { mgr.abort(0x5eed5eed5eefL); return ""; }, net.jini.core.transaction.UnknownTransactionException.class);
                    return "";
                });
                rule("TX.2.5 a join after abort CannotJoinException", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    mgr.abort(c.id);
                    net.jini.core.transaction.server.TransactionParticipant p = (net.jini.core.transaction.server.TransactionParticipant) export(new Voter(P));
                    expect("join", () -> { mgr.join(c.id, p, 1); return ""; }, net.jini.core.transaction.CannotJoinException.class,
                        net.jini.core.transaction.UnknownTransactionException.class);
                    return "";
                });
                rule("TX.2.8 a lone NOTCHANGED participant: the commit succeeds", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    Voter v = new Voter(net.jini.core.transaction.server.TransactionConstants.NOTCHANGED);
                    mgr.join(c.id, (net.jini.core.transaction.server.TransactionParticipant) export(v), 1);
                    mgr.commit(c.id, 10000);
                    return "heard " + v.calls;
                });
                rule("TX.2.8 a prepare that fails for now is asked again", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    Flaky f = new Flaky(P, "prepare", 1, null);
                    Voter w = new Voter(P);
                    mgr.join(c.id, (net.jini.core.transaction.server.TransactionParticipant) export(f), 1);
                    mgr.join(c.id, (net.jini.core.transaction.server.TransactionParticipant) export(w), 1);
                    mgr.commit(c.id, 30000);
                    that(f.calls.equals(List.of("prepare-failed", "prepare", "commit")), "heard " + f.calls);
                    return "";
                });
                rule("TX.2.8 a participant that does not know the transaction at prepare aborts it", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    Flaky f = new Flaky(P, "prepare", -1, new net.jini.core.transaction.UnknownTransactionException("gone"));
                    Voter w = new Voter(P);
                    mgr.join(c.id, (net.jini.core.transaction.server.TransactionParticipant) export(f), 1);
                    mgr.join(c.id, (net.jini.core.transaction.server.TransactionParticipant) export(w), 1);
                    expect("commit", () -> { mgr.commit(c.id); return ""; }, net.jini.core.transaction.CannotCommitException.class);
                    return "";
                });
                rule("TX.2.8 a commit that fails for now is told again", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    Flaky f = new Flaky(P, "commit", 1, null);
                    Voter w = new Voter(P);
                    mgr.join(c.id, (net.jini.core.transaction.server.TransactionParticipant) export(f), 1);
                    mgr.join(c.id, (net.jini.core.transaction.server.TransactionParticipant) export(w), 1);
                    mgr.commit(c.id, 30000);
                    that(f.calls.equals(List.of("prepare", "commit-failed", "commit")), "heard " + f.calls);
                    return "";
                });
                rule("TX.2.7 commit(waitFor) past which a participant is not told: TimeoutExpiredException, committed", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    Flaky f = new Flaky(P, "commit", -1, null);
                    Voter w = new Voter(P);
                    mgr.join(c.id, (net.jini.core.transaction.server.TransactionParticipant) export(f), 1);
                    mgr.join(c.id, (net.jini.core.transaction.server.TransactionParticipant) export(w), 1);
                    try {
                        mgr.commit(c.id, 1500);
                    } catch (net.jini.core.transaction.TimeoutExpiredException e) {
                        that(e.committed, "not committed");
                        return "";
                    }
                    throw new IllegalStateException("commit returned although a participant was never told");
                });
                rule("TX.2.5 a join with another crash count CrashCountException", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    net.jini.core.transaction.server.TransactionParticipant p = (net.jini.core.transaction.server.TransactionParticipant) export(new Voter(P));
                    mgr.join(c.id, p, 1);
                    mgr.join(c.id, p, 1); // the same again: fine
                    expect("join(2)", () -> { mgr.join(c.id, p, 2); return ""; }, net.jini.core.transaction.server.CrashCountException.class);
                    try { mgr.abort(c.id); } catch (Exception e) { }
                    return "";
                });
                rule("TX.2.7 abort, then commit CannotCommitException", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    mgr.abort(c.id);
                    expect("commit", () -> { mgr.commit(c.id); return ""; }, net.jini.core.transaction.CannotCommitException.class,
                        net.jini.core.transaction.UnknownTransactionException.class);
                    return "";
                });
                rule("TX.2.7 commit, then abort CannotAbortException", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    mgr.commit(c.id);
                    expect("abort", () -> { mgr.abort(c.id); return ""; }, net.jini.core.transaction.CannotAbortException.class,
                        net.jini.core.transaction.UnknownTransactionException.class);
                    return "";
                });
                rule("TX.2.5 a join after commit CannotJoinException", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    mgr.commit(c.id);
                    net.jini.core.transaction.server.TransactionParticipant p = (net.jini.core.transaction.server.TransactionParticipant) export(new Voter(P));
                    expect("join", () -> { mgr.join(c.id, p, 1); return ""; }, net.jini.core.transaction.CannotJoinException.class,
                        net.jini.core.transaction.UnknownTransactionException.class);
                    return "";
                });
                rule("TX.2.8 a participant voting ABORTED aborts the commit", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    Voter no = new Voter(net.jini.core.transaction.server.TransactionConstants.ABORTED), yes = new Voter(P);
                    mgr.join(c.id, (net.jini.core.transaction.server.TransactionParticipant) export(no), 1);
                    mgr.join(c.id, (net.jini.core.transaction.server.TransactionParticipant) export(yes), 1);
                    expect("commit", () -> { mgr.commit(c.id); return ""; }, net.jini.core.transaction.CannotCommitException.class);
                    long end = System.currentTimeMillis() + 10000;
                    while (!yes.calls.contains("abort") && System.currentTimeMillis() < end) Thread.sleep(50);
                    that(!yes.calls.contains("commit") && yes.calls.contains("abort"), "the other participant heard " + yes.calls);
                    return "";
                });
                rule("TX.2.8 a NOTCHANGED participant is not told to commit", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    Voter same = new Voter(net.jini.core.transaction.server.TransactionConstants.NOTCHANGED), yes = new Voter(P);
                    mgr.join(c.id, (net.jini.core.transaction.server.TransactionParticipant) export(same), 1);
                    mgr.join(c.id, (net.jini.core.transaction.server.TransactionParticipant) export(yes), 1);
                    mgr.commit(c.id, 10000);
                    that(same.calls.equals(List.of("prepare")) && yes.calls.equals(List.of("prepare", "commit")), "heard " + same.calls + " and " + yes.calls);
                    return "";
                });
                rule("TX.2.8 commit with waitFor returns once participants are told", () -> {
                    net.jini.core.transaction.server.TransactionManager.Created c = mgr.create(60000);
                    Voter yes = new Voter(P);
                    mgr.join(c.id, (net.jini.core.transaction.server.TransactionParticipant) export(yes), 1);
                    mgr.commit(c.id, 10000);
                    that(yes.calls.equals(List.of("prepareAndCommit")), "heard " + yes.calls);
                    return "";
                });
                break;
            }
            default: throw new IllegalArgumentException("service " + service);
        }
        say("SPEC ok=" + specOK + "/" + specN);
    }

    static void hold() throws Exception {
        String loc = opt("--locator", null);
        net.jini.lease.LeaseRenewalService lrs = (net.jini.lease.LeaseRenewalService) find(loc, net.jini.lease.LeaseRenewalService.class);
        net.jini.event.PullEventMailbox mb = (net.jini.event.PullEventMailbox) find(loc, net.jini.event.EventMailbox.class);
        net.jini.discovery.LookupDiscoveryService lds = (net.jini.discovery.LookupDiscoveryService) find(loc, net.jini.discovery.LookupDiscoveryService.class);
        ServiceRegistrar reg = registrar();
        ServiceRegistration held = reg.register(new ServiceItem(null, new HelloProxy("held"), new Entry[] { new Name("held-across") }), 10000);
        net.jini.lease.LeaseRenewalSet set = lrs.createLeaseRenewalSet(300000);
        set.renewFor(held.getLease(), Lease.FOREVER, 10000);
        net.jini.event.MailboxPullRegistration box = mb.pullRegister(300000);
        box.getListener().notify(new net.jini.core.event.RemoteEvent("hold", 3, 1, (java.rmi.MarshalledObject) null));
        RemoteEventListener l = (RemoteEventListener) export(new RemoteEventListener() { public void notify(net.jini.core.event.RemoteEvent e) { } });
        net.jini.discovery.LookupDiscoveryRegistration dr = lds.register(new String[] { "held-g" }, new LookupLocator[0], l, null, 300000);
        say("holding " + held.getServiceID());
        java.io.File go = new java.io.File(opt("--go-file", null));
        long end = System.currentTimeMillis() + Long.parseLong(opt("--secs", "60")) * 1000;
        while (!go.exists() && System.currentTimeMillis() < end) Thread.sleep(100);
        Lease[] in = set.getLeases();
        net.jini.core.event.RemoteEvent e = box.getRemoteEvents().next(10000);
        String[] g = dr.getGroups();
        set.getRenewalSetLease().renew(300000);
        box.getLease().renew(300000);
        dr.getLease().renew(300000);
        Thread.sleep(12000); // past the held lease's own period: the renewal service kept it
        boolean there = reg.lookup(new ServiceTemplate(held.getServiceID(), null, null)) != null;
        say("after leases=" + in.length + " event=" + (e == null ? "none" : String.valueOf(e.getSequenceNumber())) + " groups=" + g.length
            + " renewed=yes registered=" + (there ? "yes" : "no"));
        set.getRenewalSetLease().cancel();
        box.getLease().cancel();
        dr.getLease().cancel();
        held.getLease().cancel();
    }
}
