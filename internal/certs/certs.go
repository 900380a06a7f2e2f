// Package certs creates and loads the PKI crdserver serves with: a private
// CA, a serving certificate signed by it, an admin client certificate and an
// admin kubeconfig. Everything lives as PEM files in one directory so that a
// restart keeps the identities clients already trust.
package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// File names inside the PKI directory.
const (
	CACertName      = "ca.crt"
	CAKeyName       = "ca.key"
	ServingCertName = "serving.crt"
	ServingKeyName  = "serving.key"
	AdminCertName   = "admin.crt"
	AdminKeyName    = "admin.key"
	KubeconfigName  = "admin.kubeconfig"
)

// Subjects and lifetimes of what Ensure issues.
const (
	CACommonName      = "crdserver-ca"
	ServingCommonName = "crdserver"
	AdminCommonName   = "admin"
	AdminOrganization = "system:masters"

	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
	// renewBefore re-issues a leaf certificate at start when less than this
	// is left, so a server restarted now and then never serves an expired one.
	renewBefore = 30 * 24 * time.Hour
	// backdate tolerates clients whose clock is a little behind ours.
	backdate = time.Hour
)

// PKI is the certificate material of one crdserver data directory.
type PKI struct {
	// ServingCert is the serving certificate with its key, ready for
	// tls.Config.Certificates. Its Leaf is set.
	ServingCert tls.Certificate
	// ClientCAPool holds the CA that signs client certificates (the admin's).
	ClientCAPool *x509.CertPool
	// CAPEM is the CA certificate in PEM form, for kubeconfigs and caBundles.
	CAPEM []byte

	// Paths of the files Ensure manages. KubeconfigFile is where the server
	// is expected to write the admin kubeconfig (see WriteKubeconfig).
	Dir             string
	CACertFile      string
	CAKeyFile       string
	ServingCertFile string
	ServingKeyFile  string
	AdminCertFile   string
	AdminKeyFile    string
	KubeconfigFile  string

	adminCertPEM []byte
	adminKeyPEM  []byte
	noSync       bool // files are written without fsync (EnsureUnsynced)
}

// Ensure returns the PKI stored under dir, creating what is missing.
//
// On first start it creates the CA, the serving certificate and the admin
// client certificate. Later starts reuse the files byte for byte, except that
// the serving certificate is re-issued (from the same CA, with a new key) when
// it lacks one of the requested names, is close to expiry or was not signed by
// the CA; the admin certificate likewise when it is close to expiry or not
// signed by the CA. The serving certificate always covers localhost,
// 127.0.0.1, ::1 and the host name; sans adds more (IP addresses become IP
// SANs, anything else a DNS SAN).
//
// A CA certificate without its key (or the reverse) is an error rather than a
// reason to start over: a new CA would silently invalidate every kubeconfig
// and caBundle handed out before.
func Ensure(dir string, sans []string) (*PKI, error) {
	host, _ := os.Hostname() // best effort: a missing host name only drops one SAN
	return ensure(dir, sans, env{now: time.Now, hostname: host})
}

// EnsureUnsynced is Ensure for a throwaway data directory (a server on
// memory storage, a test's): files are written without waiting for the
// disk, which took a fifth of a test server's start. A crash while they
// are written may leave them torn.
func EnsureUnsynced(dir string, sans []string) (*PKI, error) {
	host, _ := os.Hostname()
	return ensure(dir, sans, env{now: time.Now, hostname: host, noSync: true})
}

// env holds what ensure takes from the outside world, so tests can fix it.
type env struct {
	now      func() time.Time
	hostname string
	noSync   bool // see EnsureUnsynced
}

func ensure(dir string, extraSANs []string, e env) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating PKI directory: %w", err)
	}
	p := &PKI{
		Dir:             dir,
		CACertFile:      filepath.Join(dir, CACertName),
		CAKeyFile:       filepath.Join(dir, CAKeyName),
		ServingCertFile: filepath.Join(dir, ServingCertName),
		ServingKeyFile:  filepath.Join(dir, ServingKeyName),
		AdminCertFile:   filepath.Join(dir, AdminCertName),
		AdminKeyFile:    filepath.Join(dir, AdminKeyName),
		KubeconfigFile:  filepath.Join(dir, KubeconfigName),
		noSync:          e.noSync,
	}
	now := e.now()

	ca, err := ensureCA(p, now)
	if err != nil {
		return nil, err
	}
	p.CAPEM = pemEncode("CERTIFICATE", ca.cert.Raw)
	p.ClientCAPool = x509.NewCertPool()
	p.ClientCAPool.AddCert(ca.cert)

	dnsNames, ips := servingSANs(e.hostname, extraSANs)
	servingOK := func(c *x509.Certificate) bool { return coversSANs(c, dnsNames, ips) }
	servingTmpl := func() *x509.Certificate {
		return &x509.Certificate{
			Subject:     pkix.Name{CommonName: ServingCommonName},
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			DNSNames:    dnsNames,
			IPAddresses: ips,
		}
	}
	certPEM, keyPEM, err := ensureLeaf(ca, p.ServingCertFile, p.ServingKeyFile, now, servingOK, servingTmpl)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	if p.ServingCert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}

	adminTmpl := func() *x509.Certificate {
		return &x509.Certificate{
			Subject:     pkix.Name{CommonName: AdminCommonName, Organization: []string{AdminOrganization}},
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
	}
	p.adminCertPEM, p.adminKeyPEM, err = ensureLeaf(ca, p.AdminCertFile, p.AdminKeyFile, now, nil, adminTmpl)
	if err != nil {
		return nil, fmt.Errorf("admin certificate: %w", err)
	}
	return p, nil
}

// WriteKubeconfig writes a kubeconfig that reaches serverURL as the admin
// user (cluster, user and context all named for crdserver, the context set
// current), with the certificates embedded so the file stands alone. The file
// is written atomically with mode 0600. It is separate from Ensure because the
// URL is known only once the listener is bound.
func (p *PKI) WriteKubeconfig(path, serverURL string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["crdserver"] = &clientcmdapi.Cluster{
		Server:                   serverURL,
		CertificateAuthorityData: p.CAPEM,
	}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: p.adminCertPEM,
		ClientKeyData:         p.adminKeyPEM,
	}
	cfg.Contexts["crdserver"] = &clientcmdapi.Context{Cluster: "crdserver", AuthInfo: "admin"}
	cfg.CurrentContext = "crdserver"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encoding kubeconfig: %w", err)
	}
	if err := writeFileAtomic(path, data, 0o600, !p.noSync); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}

// LoadServing loads a user-provided serving certificate and key (PEM). The
// certificate file may carry intermediates after the leaf.
func LoadServing(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("loading serving certificate %s: %w", certFile, err)
	}
	return cert, nil
}

// LoadCAPool loads a PEM bundle of CA certificates, for verifying client
// certificates. A file holding no certificate is an error.
func LoadCAPool(file string) (*x509.CertPool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("loading CA bundle: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("loading CA bundle %s: no PEM certificate found", file)
	}
	return pool, nil
}

type authority struct {
	cert   *x509.Certificate
	key    crypto.Signer
	noSync bool // as the PKI's: leaves are written without fsync
}

// ensureCA loads the CA pair or, when neither file exists, creates it.
func ensureCA(p *PKI, now time.Time) (*authority, error) {
	certPEM, certErr := os.ReadFile(p.CACertFile)
	keyPEM, keyErr := os.ReadFile(p.CAKeyFile)
	switch {
	case certErr == nil && keyErr == nil:
		cert, key, err := parsePair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("loading CA from %s: %w", p.Dir, err)
		}
		return &authority{cert: cert, key: key, noSync: p.noSync}, nil
	case errors.Is(certErr, fs.ErrNotExist) && errors.Is(keyErr, fs.ErrNotExist):
		// First start: create below.
	case certErr != nil && !errors.Is(certErr, fs.ErrNotExist):
		return nil, fmt.Errorf("loading CA: %w", certErr)
	case keyErr != nil && !errors.Is(keyErr, fs.ErrNotExist):
		return nil, fmt.Errorf("loading CA: %w", keyErr)
	default:
		return nil, fmt.Errorf("incomplete CA in %s: %s and %s must both exist or both be absent", p.Dir, CACertName, CAKeyName)
	}

	key, err := newKey()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: CACommonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	if tmpl.SerialNumber, err = newSerial(); err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing new CA certificate: %w", err)
	}
	// Key first: a crash between the two writes leaves a key without a
	// certificate, which ensureCA reports instead of silently replacing.
	if err := writeKey(p.CAKeyFile, key, !p.noSync); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(p.CACertFile, pemEncode("CERTIFICATE", der), 0o644, !p.noSync); err != nil {
		return nil, fmt.Errorf("writing CA certificate: %w", err)
	}
	return &authority{cert: cert, key: key, noSync: p.noSync}, nil
}

// ensureLeaf returns the PEM pair stored at certFile/keyFile when it is still
// good (signed by ca, matching key, far from expiry, and accepted by ok when
// ok is set); otherwise it issues a new pair from tmpl and stores it.
func ensureLeaf(ca *authority, certFile, keyFile string, now time.Time, ok func(*x509.Certificate) bool, tmpl func() *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	certPEM, certErr := os.ReadFile(certFile)
	keyPEM, keyErr := os.ReadFile(keyFile)
	if certErr == nil && keyErr == nil {
		cert, _, err := parsePair(certPEM, keyPEM)
		if err == nil && cert.CheckSignatureFrom(ca.cert) == nil &&
			now.Add(renewBefore).Before(cert.NotAfter) && (ok == nil || ok(cert)) {
			return certPEM, keyPEM, nil
		}
	}

	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	t := tmpl()
	t.NotBefore = now.Add(-backdate)
	t.NotAfter = now.Add(leafValidity)
	if t.NotAfter.After(ca.cert.NotAfter) {
		t.NotAfter = ca.cert.NotAfter
	}
	if t.SerialNumber, err = newSerial(); err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, t, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("issuing certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding key: %w", err)
	}
	certPEM, keyPEM = pemEncode("CERTIFICATE", der), pemEncode("EC PRIVATE KEY", keyDER)
	if err := writeFileAtomic(keyFile, keyPEM, 0o600, !ca.noSync); err != nil {
		return nil, nil, fmt.Errorf("writing key: %w", err)
	}
	if err := writeFileAtomic(certFile, certPEM, 0o644, !ca.noSync); err != nil {
		return nil, nil, fmt.Errorf("writing certificate: %w", err)
	}
	return certPEM, keyPEM, nil
}

// servingSANs returns the names the serving certificate must cover, defaults
// first, without duplicates.
func servingSANs(hostname string, extra []string) (dnsNames []string, ips []net.IP) {
	all := append([]string{"localhost", "127.0.0.1", "::1", hostname}, extra...)
	for _, s := range all {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if ip := net.ParseIP(s); ip != nil {
			if !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
			continue
		}
		s = strings.ToLower(s)
		if !slices.Contains(dnsNames, s) {
			dnsNames = append(dnsNames, s)
		}
	}
	return dnsNames, ips
}

// coversSANs reports whether c names every one of dnsNames and ips.
func coversSANs(c *x509.Certificate, dnsNames []string, ips []net.IP) bool {
	for _, ip := range ips {
		if !slices.ContainsFunc(c.IPAddresses, ip.Equal) {
			return false
		}
	}
	for _, n := range dnsNames {
		if !slices.ContainsFunc(c.DNSNames, func(have string) bool { return strings.EqualFold(have, n) }) {
			return false
		}
	}
	return true
}

// parsePair parses a PEM certificate and private key and checks that they
// belong together.
func parsePair(certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, nil, errors.New("no PEM certificate found")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing certificate: %w", err)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, nil, err
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, nil, errors.New("private key does not match certificate")
	}
	return cert, key, nil
}

// parseKey accepts SEC 1 ("EC PRIVATE KEY") and PKCS #8 ("PRIVATE KEY").
func parseKey(keyPEM []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("no PEM private key found")
	}
	switch block.Type {
	case "EC PRIVATE KEY":
		k, err := x509.ParseECPrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parsing private key: %w", err)
		}
		return k, nil
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parsing private key: %w", err)
		}
		signer, ok := k.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("private key of type %T cannot sign", k)
		}
		return signer, nil
	default:
		return nil, fmt.Errorf("unsupported private key PEM type %q", block.Type)
	}
}

func newKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key: %w", err)
	}
	return key, nil
}

// newSerial returns a random 128-bit serial number, as RFC 5280 recommends
// for certificates issued without a serial counter.
func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	return n, nil
}

func writeKey(path string, key *ecdsa.PrivateKey, sync bool) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding key: %w", err)
	}
	if err := writeFileAtomic(path, pemEncode("EC PRIVATE KEY", der), 0o600, sync); err != nil {
		return fmt.Errorf("writing key: %w", err)
	}
	return nil
}

func pemEncode(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// writeFileAtomic writes data to a temporary file beside path and renames it
// into place, so a reader (or a crash) never sees half a file. The mode is set
// before any byte is written, so a key is never readable by others. With
// sync it is on disk before the rename, so a crash leaves the old file or
// the new one.
func writeFileAtomic(path string, data []byte, mode os.FileMode, sync bool) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// IssueClient issues a client certificate for user in groups (the subject's
// common name and organizations, which the server reads as user name and
// groups) from the CA stored under dir, as Ensure created it. The pair is
// returned, not stored: it is for tools such as the load generator that act
// as other users than the admin, and lives as long as they run (a day).
func IssueClient(dir, user string, groups []string) (certPEM, keyPEM []byte, err error) {
	if user == "" {
		return nil, nil, errors.New("issuing client certificate: empty user name")
	}
	caCert, err := os.ReadFile(filepath.Join(dir, CACertName))
	if err != nil {
		return nil, nil, fmt.Errorf("issuing client certificate: loading CA: %w", err)
	}
	caKey, err := os.ReadFile(filepath.Join(dir, CAKeyName))
	if err != nil {
		return nil, nil, fmt.Errorf("issuing client certificate: loading CA: %w", err)
	}
	cert, key, err := parsePair(caCert, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("issuing client certificate: loading CA from %s: %w", dir, err)
	}
	leafKey, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		NotBefore:   now.Add(-backdate),
		NotAfter:    now.Add(24 * time.Hour),
	}
	if tmpl.NotAfter.After(cert.NotAfter) {
		tmpl.NotAfter = cert.NotAfter
	}
	if tmpl.SerialNumber, err = newSerial(); err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, cert, leafKey.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("issuing client certificate for %s: %w", user, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(leafKey)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding key: %w", err)
	}
	return pemEncode("CERTIFICATE", der), pemEncode("EC PRIVATE KEY", keyDER), nil
}

// SharedNames are the files of a PKI directory that the replicas of one
// cluster must share: the CA, so that each replica's certificates (issued
// by itself at its first start) are good for all, and the service account
// signing key (internal/server keeps it beside them), so that tokens are.
var SharedNames = []string{CACertName, CAKeyName, "service-account.key"}

// CopyShared copies the SharedNames files that src has and dst lacks from
// src to dst, creating dst: a replica's PKI directory before its first
// start, from another replica's.
func CopyShared(src, dst string) error {
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	for _, name := range SharedNames {
		if _, err := os.Stat(filepath.Join(dst, name)); err == nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := writeFileAtomic(filepath.Join(dst, name), data, 0o600, true); err != nil {
			return err
		}
	}
	return nil
}

// Fingerprint is the SHA-256 of the DER of every certificate in the PEM
// bundles, in order, hex-encoded: the same CA gives the same fingerprint
// whatever its PEM's line breaks or comments.
func Fingerprint(bundles ...[]byte) string {
	h := sha256.New()
	for _, b := range bundles {
		for {
			var block *pem.Block
			block, b = pem.Decode(b)
			if block == nil {
				break
			}
			if block.Type == "CERTIFICATE" {
				h.Write(block.Bytes)
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
