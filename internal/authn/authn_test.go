package authn

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type certKey struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// issue makes a certificate signed by parent (self-signed when parent is nil).
func issue(t *testing.T, parent *certKey, subj pkix.Name, ca bool, eku []x509.ExtKeyUsage, notAfter time.Time) *certKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               subj,
		NotBefore:             epoch.Add(-time.Hour),
		NotAfter:              notAfter,
		IsCA:                  ca,
		BasicConstraintsValid: true,
		ExtKeyUsage:           eku,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
	}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &certKey{c, key}
}

func TestX509(t *testing.T) {
	year := epoch.Add(365 * 24 * time.Hour)
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	ca := issue(t, nil, pkix.Name{CommonName: "ca"}, true, nil, year)
	other := issue(t, nil, pkix.Name{CommonName: "other-ca"}, true, nil, year)
	inter := issue(t, ca, pkix.Name{CommonName: "intermediate"}, true, nil, year)
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)

	alice := issue(t, ca, pkix.Name{CommonName: "alice", Organization: []string{"dev", "ops"}}, false, client, year)
	bob := issue(t, inter, pkix.Name{CommonName: "bob"}, false, client, year)
	noCN := issue(t, ca, pkix.Name{Organization: []string{"dev"}}, false, client, year)
	serverOnly := issue(t, ca, pkix.Name{CommonName: "srv"}, false, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, year)
	stranger := issue(t, other, pkix.Name{CommonName: "eve"}, false, client, year)
	expired := issue(t, ca, pkix.Name{CommonName: "old"}, false, client, epoch.Add(-time.Minute))

	cases := []struct {
		name  string
		chain []*x509.Certificate
		noTLS bool
		user  *User
		err   bool
	}{
		{name: "no TLS", noTLS: true},
		{name: "no certificate"},
		{name: "valid", chain: []*x509.Certificate{alice.cert}, user: &User{Name: "alice", Groups: []string{"dev", "ops", Authenticated}}},
		{name: "via intermediate", chain: []*x509.Certificate{bob.cert, inter.cert}, user: &User{Name: "bob", Groups: []string{Authenticated}}},
		{name: "intermediate missing", chain: []*x509.Certificate{bob.cert}, err: true},
		{name: "no common name", chain: []*x509.Certificate{noCN.cert}},
		{name: "server usage only", chain: []*x509.Certificate{serverOnly.cert}, err: true},
		{name: "unknown CA", chain: []*x509.Certificate{stranger.cert}, err: true},
		{name: "expired", chain: []*x509.Certificate{expired.cert}, err: true},
	}
	a := &X509{Roots: roots, Now: func() time.Time { return epoch }}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			if tc.noTLS {
				r.TLS = nil
			} else {
				r.TLS = &tls.ConnectionState{PeerCertificates: tc.chain}
			}
			u, ok, err := a.Authenticate(r)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if ok != (tc.user != nil) || !reflect.DeepEqual(u, tc.user) {
				t.Fatalf("got %+v, %v; want %+v", u, ok, tc.user)
			}
		})
	}
}

func TestUnion(t *testing.T) {
	fail := AuthenticatorFunc(func(*http.Request) (*User, bool, error) { return nil, false, errors.New("bad token") })
	none := AuthenticatorFunc(func(*http.Request) (*User, bool, error) { return nil, false, nil })
	carol := AuthenticatorFunc(func(*http.Request) (*User, bool, error) { return &User{Name: "carol"}, true, nil })
	r := httptest.NewRequest("GET", "/", nil)

	if u, ok, err := (Union{fail, none, carol}).Authenticate(r); !ok || err != nil || u.Name != "carol" {
		t.Errorf("union with a match: %v %v %v", u, ok, err)
	}
	if _, ok, err := (Union{none, fail}).Authenticate(r); ok || err == nil || err.Error() != "bad token" {
		t.Errorf("union without a match: %v %v", ok, err)
	}
	if _, ok, err := (Union{none}).Authenticate(r); ok || err != nil {
		t.Errorf("union of no credentials: %v %v", ok, err)
	}
}

func TestUserContext(t *testing.T) {
	if _, ok := UserFrom(context.Background()); ok {
		t.Fatal("user in empty context")
	}
	u := &User{Name: "a"}
	if got, ok := UserFrom(WithUser(context.Background(), u)); !ok || got != u {
		t.Fatalf("got %v %v", got, ok)
	}
	if _, ok := UserFrom(WithUser(context.Background(), nil)); ok {
		t.Fatal("nil user reported as present")
	}
	if g := WithAuthenticatedGroup(&User{Groups: []string{Authenticated}}).Groups; len(g) != 1 {
		t.Fatalf("group added twice: %v", g)
	}
}
