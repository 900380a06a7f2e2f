// Package jws parses, signs and verifies compact JSON Web Signatures (the
// form of every JWT a Kubernetes client presents) and the JSON Web Keys
// that verify them. It checks signatures only; what the claims mean is the
// caller's business (service account tokens, OIDC).
package jws

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"math/big"
	"strings"
)

// MaxTokenSize bounds the tokens Parse reads: far above any real JWT, far
// below what would cost the server to decode.
const MaxTokenSize = 64 << 10

// Errors callers branch on.
var (
	// ErrMalformed is a token that is not a compact JWS.
	ErrMalformed = errors.New("jws: malformed token")
	// ErrSignature is a signature that the key does not verify.
	ErrSignature = errors.New("jws: invalid signature")
	// ErrAlgorithm is a signature algorithm the key cannot have made.
	ErrAlgorithm = errors.New("jws: unsupported or mismatched algorithm")
)

// Header is the protected header of a token.
type Header struct {
	Alg string `json:"alg"`
	Kid string `json:"kid,omitempty"`
	Typ string `json:"typ,omitempty"`
}

// Token is a parsed, not yet verified, compact JWS.
type Token struct {
	Header Header
	// Payload is the decoded payload (JSON claims for a JWT).
	Payload []byte

	signingInput string
	signature    []byte
}

// b64 is strict: a token has one encoding, so a verified one cannot be
// re-spelt into another string that verifies too.
var b64 = base64.RawURLEncoding.Strict()

// Parse splits and decodes a compact JWS. It does not verify the signature.
func Parse(s string) (*Token, error) {
	if len(s) > MaxTokenSize {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, MaxTokenSize)
	}
	h, rest, ok := strings.Cut(s, ".")
	p, sig, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || strings.Contains(sig, ".") {
		return nil, fmt.Errorf("%w: want three dot-separated parts", ErrMalformed)
	}
	hb, err := b64.DecodeString(h)
	if err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrMalformed, err)
	}
	t := &Token{signingInput: s[:len(h)+1+len(p)]}
	if err := json.Unmarshal(hb, &t.Header); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrMalformed, err)
	}
	if t.Payload, err = b64.DecodeString(p); err != nil {
		return nil, fmt.Errorf("%w: payload: %v", ErrMalformed, err)
	}
	if t.signature, err = b64.DecodeString(sig); err != nil {
		return nil, fmt.Errorf("%w: signature: %v", ErrMalformed, err)
	}
	return t, nil
}

// algorithm is one JWS "alg": its hash and key type.
type algorithm struct {
	hash crypto.Hash
	new  func() hash.Hash
	// curveBits is the ECDSA curve's size; 0 for RSA.
	curveBits int
}

var algorithms = map[string]algorithm{
	"RS256": {crypto.SHA256, sha256.New, 0},
	"RS384": {crypto.SHA384, sha512.New384, 0},
	"RS512": {crypto.SHA512, sha512.New, 0},
	"ES256": {crypto.SHA256, sha256.New, 256},
	"ES384": {crypto.SHA384, sha512.New384, 384},
	"ES512": {crypto.SHA512, sha512.New, 521},
}

// Verify checks the token's signature with key (*rsa.PublicKey or
// *ecdsa.PublicKey). The header's alg must suit the key: "none" and HMAC
// are never accepted.
func (t *Token) Verify(key crypto.PublicKey) error {
	alg, ok := algorithms[t.Header.Alg]
	if !ok {
		return fmt.Errorf("%w: %q", ErrAlgorithm, t.Header.Alg)
	}
	h := alg.new()
	h.Write([]byte(t.signingInput))
	digest := h.Sum(nil)
	switch k := key.(type) {
	case *rsa.PublicKey:
		if alg.curveBits != 0 {
			return fmt.Errorf("%w: %s with an RSA key", ErrAlgorithm, t.Header.Alg)
		}
		if rsa.VerifyPKCS1v15(k, alg.hash, digest, t.signature) != nil {
			return ErrSignature
		}
		return nil
	case *ecdsa.PublicKey:
		if alg.curveBits != k.Curve.Params().BitSize {
			return fmt.Errorf("%w: %s with a %s key", ErrAlgorithm, t.Header.Alg, k.Curve.Params().Name)
		}
		size := (alg.curveBits + 7) / 8
		if len(t.signature) != 2*size {
			return ErrSignature
		}
		r := new(big.Int).SetBytes(t.signature[:size])
		s := new(big.Int).SetBytes(t.signature[size:])
		if !ecdsa.Verify(k, digest, r, s) {
			return ErrSignature
		}
		return nil
	}
	return fmt.Errorf("%w: key type %T", ErrAlgorithm, key)
}

// Sign returns the compact JWS of payload (marshalled to JSON) signed by key
// (an *ecdsa.PrivateKey on P-256, P-384 or P-521, or an *rsa.PrivateKey,
// which signs RS256), with kid in the header.
func Sign(key crypto.Signer, kid string, payload any) (string, error) {
	var name string
	switch k := key.Public().(type) {
	case *rsa.PublicKey:
		name = "RS256"
	case *ecdsa.PublicKey:
		name = map[int]string{256: "ES256", 384: "ES384", 521: "ES512"}[k.Curve.Params().BitSize]
	}
	alg, ok := algorithms[name]
	if !ok {
		return "", fmt.Errorf("%w: key type %T", ErrAlgorithm, key.Public())
	}
	hb, err := json.Marshal(Header{Alg: name, Kid: kid})
	if err != nil {
		return "", err
	}
	pb, err := json.Marshal(payload)
	if err != nil {
		return "", fmt.Errorf("jws: encoding payload: %w", err)
	}
	input := b64.EncodeToString(hb) + "." + b64.EncodeToString(pb)
	h := alg.new()
	h.Write([]byte(input))
	digest := h.Sum(nil)
	var sig []byte
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, digest)
		if err != nil {
			return "", fmt.Errorf("jws: signing: %w", err)
		}
		size := (alg.curveBits + 7) / 8
		sig = make([]byte, 2*size)
		r.FillBytes(sig[:size])
		s.FillBytes(sig[size:])
	default:
		if sig, err = key.Sign(rand.Reader, digest, alg.hash); err != nil {
			return "", fmt.Errorf("jws: signing: %w", err)
		}
	}
	return input + "." + b64.EncodeToString(sig), nil
}

// KeyID is the key id upstream gives a service account signing key: the
// unpadded base64url SHA-256 of its PKIX DER form, so that every server
// holding the key names it alike.
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("jws: key id: %w", err)
	}
	sum := sha256.Sum256(der)
	return b64.EncodeToString(sum[:]), nil
}

// JWK is one JSON Web Key, public parts only.
type JWK struct {
	Kty string `json:"kty"`
	Kid string `json:"kid,omitempty"`
	Use string `json:"use,omitempty"`
	Alg string `json:"alg,omitempty"`
	// RSA
	N string `json:"n,omitempty"`
	E string `json:"e,omitempty"`
	// EC
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
}

// JWKS is a JSON Web Key Set.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// PublicJWK describes pub for a key set, as upstream's /openid/v1/jwks
// does: use "sig" and the alg the key signs with.
func PublicJWK(pub crypto.PublicKey, kid string) (JWK, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return JWK{Kty: "RSA", Kid: kid, Use: "sig", Alg: "RS256",
			N: b64.EncodeToString(k.N.Bytes()), E: b64.EncodeToString(big.NewInt(int64(k.E)).Bytes())}, nil
	case *ecdsa.PublicKey:
		bits := k.Curve.Params().BitSize
		size := (bits + 7) / 8
		x, y := make([]byte, size), make([]byte, size)
		k.X.FillBytes(x)
		k.Y.FillBytes(y)
		return JWK{Kty: "EC", Kid: kid, Use: "sig", Alg: map[int]string{256: "ES256", 384: "ES384", 521: "ES512"}[bits],
			Crv: k.Curve.Params().Name, X: b64.EncodeToString(x), Y: b64.EncodeToString(y)}, nil
	}
	return JWK{}, fmt.Errorf("jws: key type %T", pub)
}

// PublicKey returns the key k describes.
func (k JWK) PublicKey() (crypto.PublicKey, error) {
	switch k.Kty {
	case "RSA":
		n, err1 := b64.DecodeString(k.N)
		e, err2 := b64.DecodeString(k.E)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("jws: RSA key %q: %w", k.Kid, err)
		}
		if len(e) == 0 || len(e) > 4 || len(n) < 256 {
			return nil, fmt.Errorf("jws: RSA key %q: bad modulus or exponent", k.Kid)
		}
		return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}, nil
	case "EC":
		x, err1 := b64.DecodeString(k.X)
		y, err2 := b64.DecodeString(k.Y)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("jws: EC key %q: %w", k.Kid, err)
		}
		var c elliptic.Curve
		switch k.Crv {
		case "P-256":
			c = elliptic.P256()
		case "P-384":
			c = elliptic.P384()
		case "P-521":
			c = elliptic.P521()
		default:
			return nil, fmt.Errorf("jws: EC key %q: unsupported curve %q", k.Kid, k.Crv)
		}
		// An uncompressed point, parsed with its on-curve check.
		size := (c.Params().BitSize + 7) / 8
		point := append([]byte{4}, append(padLeft(x, size), padLeft(y, size)...)...)
		pub, err := ecdsa.ParseUncompressedPublicKey(c, point)
		if err != nil {
			return nil, fmt.Errorf("jws: EC key %q: %w", k.Kid, err)
		}
		return pub, nil
	}
	return nil, fmt.Errorf("jws: key %q: unsupported key type %q", k.Kid, k.Kty)
}

func padLeft(b []byte, n int) []byte {
	if len(b) >= n {
		return b
	}
	return append(bytes.Repeat([]byte{0}, n-len(b)), b...)
}
