package jinidtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority a test makes: a site's (the nodes'
// --cluster-ca) or an etcd cluster's (its members' and clients'
// certificates).
type CA struct {
	// File is the CA's certificate, PEM.
	File string
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	n    int64
}

// NewCA makes a CA named name, its files in a directory of the test's.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &CA{dir: t.TempDir(), cert: cert, key: key, n: 1}
	ca.File = filepath.Join(ca.dir, "ca.crt")
	writePEM(t, ca.File, "CERTIFICATE", der)
	return ca
}

// Issue makes a certificate for name (server and client use), valid for
// ips, localhost and loopback, and returns its files.
func (ca *CA) Issue(t testing.TB, name string, ips ...netip.Addr) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca.n++
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(ca.n), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	for _, a := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, a.AsSlice())
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(ca.dir, name+".crt"), filepath.Join(ca.dir, name+".key")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", kder)
	return certFile, keyFile
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// EtcdTLS is how clients reach an etcd cluster that authenticates them
// by certificate: its CA, and a client certificate it signed.
type EtcdTLS struct {
	CA, Cert, Key string
}

// Flags are jinid's flags for it.
func (e *EtcdTLS) Flags() []string {
	if e == nil {
		return nil
	}
	return []string{"--etcd-cert", e.Cert, "--etcd-key", e.Key, "--etcd-ca", e.CA}
}
