package webhookcert

import (
	"crypto/x509"
	"testing"
)

// A client that trusts only the returned CA accepts the certificate for
// each name a webhook is reached by, and no other.
func TestCertificateVerifiesAgainstItsCA(t *testing.T) {
	cert, caPEM, err := Certificate("svc.ns.svc")
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA bundle holds no certificate")
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"127.0.0.1", "localhost", "svc.ns.svc"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool}); err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "other.example", Roots: pool}); err == nil {
		t.Error("certificate verified for a name it was not issued for")
	}
	// Each call makes a new CA: one server's bundle must not trust another's.
	other, _, err := Certificate()
	if err != nil {
		t.Fatal(err)
	}
	otherLeaf, _ := x509.ParseCertificate(other.Certificate[0])
	if _, err := otherLeaf.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: pool}); err == nil {
		t.Error("a second certificate verified against the first CA")
	}
}
