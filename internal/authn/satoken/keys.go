package satoken

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"

	"github.com/crdserver/crdserver/internal/authn/jws"
)

// LoadOrCreateKey reads the signing key at path (PEM: EC, RSA or PKCS #8
// private key), or creates an ECDSA P-256 key there when there is none.
// Keeping it in the data directory keeps tokens valid across restarts.
func LoadOrCreateKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return createKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("service account key: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("service account key %s: no PEM block", path)
	}
	var key any
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("service account key %s: %w", path, err)
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		return k, nil
	case *rsa.PrivateKey:
		return k, nil
	}
	return nil, fmt.Errorf("service account key %s: unsupported key type %T", path, key)
}

func createKey(path string) (crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating service account key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding service account key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("service account key: %w", err)
	}
	// Written aside and renamed: a crash leaves the old state or the
	// whole key, never half of one.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, fmt.Errorf("writing service account key: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("writing service account key: %w", err)
	}
	return key, nil
}

// Paths of the issuer's discovery documents, as upstream serves them.
const (
	DiscoveryPath = "/.well-known/openid-configuration"
	JWKSPath      = "/openid/v1/jwks"
)

// discovery is the OpenID provider configuration upstream publishes for
// service account tokens.
type discovery struct {
	Issuer        string   `json:"issuer"`
	JWKSURI       string   `json:"jwks_uri"`
	ResponseTypes []string `json:"response_types_supported"`
	SubjectTypes  []string `json:"subject_types_supported"`
	SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
}

// DiscoveryHandler serves DiscoveryPath and JWKSPath, so that other
// systems can verify the server's tokens. The JWKS is at the issuer URL's
// JWKSPath, as upstream's default jwks_uri has it.
func (i *Issuer) DiscoveryHandler() (http.Handler, error) {
	if err := i.init(); err != nil {
		return nil, err
	}
	jwk, err := jws.PublicJWK(i.Key.Public(), i.kid)
	if err != nil {
		return nil, err
	}
	keys, err := json.Marshal(jws.JWKS{Keys: []jws.JWK{jwk}})
	if err != nil {
		return nil, err
	}
	doc, err := json.Marshal(discovery{
		Issuer: i.URL, JWKSURI: i.URL + JWKSPath,
		ResponseTypes: []string{"id_token"}, SubjectTypes: []string{"public"}, SigningAlgs: []string{jwk.Alg},
	})
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ctype := doc, "application/json"
		if r.URL.Path == JWKSPath {
			body, ctype = keys, "application/jwk-set+json"
		}
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Cache-Control", "public, max-age=3600")
		w.Write(body)
	}), nil
}
