package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jinid/jinid/cmd/jinid/internal/jinidtest"
)

// selfSigned writes a certificate for 127.0.0.1 and its key, PEM, into
// dir.
func selfSigned(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "jinid test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "api.crt"), filepath.Join(dir, "api.key")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return cert, key
}

// The network API over TLS: the CLI trusts it with --ca, and only then;
// the URLs it is handed are https.
func TestAPIOverTLS(t *testing.T) {
	t.Parallel()
	bin := jinidtest.Binary(t)
	dir := t.TempDir()
	cert, key := selfSigned(t, t.TempDir())
	d := jinidtest.StartDaemon(t, bin, dir, "--api-tls-cert", cert, "--api-tls-key", key)
	if !strings.HasPrefix(d.API, "https://") {
		t.Fatalf("API %s, want https", d.API)
	}
	out, err := exec.Command(bin, "lookup", "register", "--type", "com.example.Secure", "--server", d.API, "--ca", cert).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "serviceID") {
		t.Fatalf("register over TLS: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "lookup", "list", "--json", "--server", d.API).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "certificate") {
		t.Fatalf("without --ca the certificate was trusted: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "mailbox", "register", "--server", d.API, "--ca", cert).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "https://127.0.0.1:") {
		t.Fatalf("a mailbox listener over TLS: %v\n%s", err, out)
	}
}
