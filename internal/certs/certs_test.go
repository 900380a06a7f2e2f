package certs

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func testEnv(now time.Time) env {
	return env{now: func() time.Time { return now }, hostname: "testhost"}
}

// readAll returns the content of every file Ensure manages, by name.
func readAll(t *testing.T, p *PKI) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, f := range []string{p.CACertFile, p.CAKeyFile, p.ServingCertFile, p.ServingKeyFile, p.AdminCertFile, p.AdminKeyFile} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}

func TestEnsureCreatesPKI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	p, err := ensure(dir, []string{"example.com", "10.1.2.3"}, testEnv(t0))
	if err != nil {
		t.Fatal(err)
	}

	for _, f := range []string{p.CAKeyFile, p.ServingKeyFile, p.AdminKeyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s mode = %v, want 0600", filepath.Base(f), mode)
		}
	}

	ca := parseCertFile(t, p.CACertFile)
	if !ca.IsCA || ca.Subject.CommonName != "crdserver-ca" {
		t.Errorf("CA: IsCA=%v CN=%q", ca.IsCA, ca.Subject.CommonName)
	}
	if got, want := ca.NotAfter.Sub(t0), caValidity; got != want {
		t.Errorf("CA lifetime = %v, want %v", got, want)
	}
	if !bytes.Equal(p.CAPEM, mustRead(t, p.CACertFile)) {
		t.Error("CAPEM differs from ca.crt")
	}

	serving := p.ServingCert.Leaf
	if serving == nil {
		t.Fatal("ServingCert.Leaf is nil")
	}
	if err := serving.CheckSignatureFrom(ca); err != nil {
		t.Errorf("serving certificate not signed by CA: %v", err)
	}
	for _, name := range []string{"localhost", "testhost", "example.com"} {
		if !slices.Contains(serving.DNSNames, name) {
			t.Errorf("serving DNSNames %v lack %q", serving.DNSNames, name)
		}
	}
	for _, ip := range []string{"127.0.0.1", "::1", "10.1.2.3"} {
		if !slices.ContainsFunc(serving.IPAddresses, net.ParseIP(ip).Equal) {
			t.Errorf("serving IPAddresses %v lack %s", serving.IPAddresses, ip)
		}
	}
	if !slices.Contains(serving.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
		t.Errorf("serving ExtKeyUsage = %v", serving.ExtKeyUsage)
	}

	admin := parseCertFile(t, p.AdminCertFile)
	if admin.Subject.CommonName != "admin" || !slices.Equal(admin.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("admin subject = %v", admin.Subject)
	}
	if !slices.Equal(admin.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Errorf("admin ExtKeyUsage = %v", admin.ExtKeyUsage)
	}
	if _, err := admin.Verify(x509.VerifyOptions{Roots: p.ClientCAPool, CurrentTime: t0, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin certificate does not verify against ClientCAPool: %v", err)
	}
}

func TestEnsureReusesFiles(t *testing.T) {
	dir := t.TempDir()
	p1, err := ensure(dir, []string{"example.com"}, testEnv(t0))
	if err != nil {
		t.Fatal(err)
	}
	before := readAll(t, p1)

	// A later start, asking for a subset of the names, changes nothing.
	p2, err := ensure(dir, []string{"EXAMPLE.com"}, testEnv(t0.Add(24*time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	after := readAll(t, p2)
	for name := range before {
		if !bytes.Equal(before[name], after[name]) {
			t.Errorf("%s changed on restart", name)
		}
	}
	if !bytes.Equal(p1.ServingCert.Certificate[0], p2.ServingCert.Certificate[0]) {
		t.Error("serving certificate changed on restart")
	}
}

func TestEnsureReissuesServingOnly(t *testing.T) {
	tests := []struct {
		name string
		sans []string
		now  time.Time
	}{
		{name: "new DNS SAN", sans: []string{"new.example.com"}, now: t0},
		{name: "new IP SAN", sans: []string{"192.0.2.7"}, now: t0},
		{name: "close to expiry", now: t0.Add(leafValidity - renewBefore + time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p1, err := ensure(dir, nil, testEnv(t0))
			if err != nil {
				t.Fatal(err)
			}
			before := readAll(t, p1)
			p2, err := ensure(dir, tt.sans, testEnv(tt.now))
			if err != nil {
				t.Fatal(err)
			}
			after := readAll(t, p2)
			changed := map[string]bool{ServingCertName: true, ServingKeyName: true}
			if tt.now != t0 {
				// Expiry concerns the admin certificate too.
				changed[AdminCertName], changed[AdminKeyName] = true, true
			}
			for name := range before {
				if got := !bytes.Equal(before[name], after[name]); got != changed[name] {
					t.Errorf("%s changed = %v, want %v", name, got, changed[name])
				}
			}
			ca := parseCertFile(t, p2.CACertFile)
			if err := p2.ServingCert.Leaf.CheckSignatureFrom(ca); err != nil {
				t.Errorf("re-issued serving certificate not signed by the same CA: %v", err)
			}
			for _, s := range tt.sans {
				dnsNames, ips := servingSANs("", []string{s})
				if !coversSANs(p2.ServingCert.Leaf, dnsNames, ips) {
					t.Errorf("re-issued serving certificate lacks %q", s)
				}
			}
		})
	}
}

func TestEnsureRejectsIncompleteCA(t *testing.T) {
	dir := t.TempDir()
	if _, err := ensure(dir, nil, testEnv(t0)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, CAKeyName)); err != nil {
		t.Fatal(err)
	}
	if _, err := ensure(dir, nil, testEnv(t0)); err == nil {
		t.Fatal("Ensure with a CA certificate but no key succeeded")
	}
}

// TestKubeconfigHandshake checks the whole chain a client sees: the kubeconfig
// loads with clientcmd and its credentials complete a mutual-TLS handshake
// against a server using the serving certificate and ClientCAPool.
func TestKubeconfigHandshake(t *testing.T) {
	p, err := Ensure(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}

	var gotCN string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) > 0 {
			gotCN = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		io.WriteString(w, "ok")
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{p.ServingCert},
		ClientCAs:    p.ClientCAPool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}
	srv.StartTLS()
	defer srv.Close()
	// httptest listens on 127.0.0.1; use "localhost" too so a DNS SAN is checked.
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	url := "https://localhost:" + port

	if err := p.WriteKubeconfig(p.KubeconfigFile, url); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p.KubeconfigFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig stat: %v, %v", fi, err)
	}
	raw, err := clientcmd.LoadFromFile(p.KubeconfigFile)
	if err != nil {
		t.Fatal(err)
	}
	if raw.CurrentContext != "crdserver" || raw.Contexts["crdserver"].AuthInfo != "admin" || raw.Clusters["crdserver"].Server != url {
		t.Fatalf("unexpected kubeconfig: %+v", raw)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", p.KubeconfigFile)
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("request with kubeconfig credentials: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || gotCN != "admin" {
		t.Errorf("status %d, client CN %q; want 200 and admin", resp.StatusCode, gotCN)
	}
}

func TestLoadServingAndCAPool(t *testing.T) {
	p, err := Ensure(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := LoadServing(p.ServingCertFile, p.ServingKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cert.Certificate[0], p.ServingCert.Certificate[0]) {
		t.Error("LoadServing returned a different certificate")
	}
	if _, err := LoadServing(p.ServingCertFile, p.AdminKeyFile); err == nil {
		t.Error("LoadServing accepted a mismatched key")
	}

	pool, err := LoadCAPool(p.CACertFile)
	if err != nil {
		t.Fatal(err)
	}
	if !pool.Equal(p.ClientCAPool) {
		t.Error("LoadCAPool(ca.crt) differs from ClientCAPool")
	}
	if _, err := LoadCAPool(p.CAKeyFile); err == nil {
		t.Error("LoadCAPool accepted a file without certificates")
	}
}

func parseCertFile(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	c, _, err := parsePair(mustRead(t, path), mustRead(t, filepath.Join(filepath.Dir(path), keyFor(filepath.Base(path)))))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func keyFor(certName string) string {
	return map[string]string{CACertName: CAKeyName, ServingCertName: ServingKeyName, AdminCertName: AdminKeyName}[certName]
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestIssueClient: a certificate issued for a user verifies as a client
// certificate against the data directory's CA, and names the user and
// groups as the server reads them.
func TestIssueClient(t *testing.T) {
	dir := t.TempDir()
	p, err := Ensure(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := IssueClient(dir, "bench-quiet", []string{"crdserver:bench", "devs"})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("pair: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: p.ClientCAPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("does not verify as a client certificate: %v", err)
	}
	// Organizations are a set in the certificate: their order is DER's.
	if orgs := slices.Sorted(slices.Values(leaf.Subject.Organization)); leaf.Subject.CommonName != "bench-quiet" || !slices.Equal(orgs, []string{"crdserver:bench", "devs"}) {
		t.Fatalf("subject %v", leaf.Subject)
	}
	if _, _, err := IssueClient(t.TempDir(), "u", nil); err == nil || !strings.Contains(err.Error(), "loading CA") {
		t.Fatalf("without a CA: %v", err)
	}
	if _, _, err := IssueClient(dir, "", nil); err == nil {
		t.Fatal("empty user name accepted")
	}
}
