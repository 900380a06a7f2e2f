package jws

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func ecKey(t testing.TB, c elliptic.Curve) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func rsaKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSignVerify(t *testing.T) {
	ec := ecKey(t, elliptic.P256())
	ec384 := ecKey(t, elliptic.P384())
	rs := rsaKey(t)
	other := ecKey(t, elliptic.P256())
	claims := map[string]any{"sub": "alice"}

	cases := []struct {
		name   string
		signer crypto.Signer
		verify crypto.PublicKey
		alg    string
		err    error
	}{
		{"ES256", ec, ec.Public(), "ES256", nil},
		{"ES384", ec384, ec384.Public(), "ES384", nil},
		{"RS256", rs, rs.Public(), "RS256", nil},
		{"other EC key", ec, other.Public(), "ES256", ErrSignature},
		{"EC token, RSA key", ec, rs.Public(), "ES256", ErrAlgorithm},
		{"RSA token, EC key", rs, ec.Public(), "RS256", ErrAlgorithm},
		{"P-384 token, P-256 key", ec384, ec.Public(), "ES384", ErrAlgorithm},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Sign(c.signer, "k1", claims)
			if err != nil {
				t.Fatal(err)
			}
			tok, err := Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			if tok.Header.Alg != c.alg || tok.Header.Kid != "k1" {
				t.Errorf("header = %+v, want alg %s kid k1", tok.Header, c.alg)
			}
			var got map[string]any
			if err := json.Unmarshal(tok.Payload, &got); err != nil || got["sub"] != "alice" {
				t.Errorf("payload = %s (%v)", tok.Payload, err)
			}
			if err := tok.Verify(c.verify); !errors.Is(err, c.err) {
				t.Errorf("Verify = %v, want %v", err, c.err)
			}
		})
	}
}

func TestTamperedAndForeignTokens(t *testing.T) {
	key := ecKey(t, elliptic.P256())
	s, err := Sign(key, "", map[string]any{"sub": "alice"})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(s, ".")
	forged := parts[0] + "." + b64.EncodeToString([]byte(`{"sub":"admin"}`)) + "." + parts[2]
	none := b64.EncodeToString([]byte(`{"alg":"none"}`)) + "." + parts[1] + "."
	hmac := b64.EncodeToString([]byte(`{"alg":"HS256"}`)) + "." + parts[1] + "." + parts[2]
	for name, c := range map[string]struct {
		tok string
		err error
	}{
		"forged payload": {forged, ErrSignature},
		"alg none":       {none, ErrAlgorithm},
		"alg HS256":      {hmac, ErrAlgorithm},
	} {
		tok, err := Parse(c.tok)
		if err != nil {
			t.Fatalf("%s: Parse: %v", name, err)
		}
		if err := tok.Verify(key.Public()); !errors.Is(err, c.err) {
			t.Errorf("%s: Verify = %v, want %v", name, err, c.err)
		}
	}
}

func TestParseMalformed(t *testing.T) {
	for _, s := range []string{
		"", "abc", "a.b", "a.b.c.d", "!!!.e30.AA", "e30.!!!.AA", "e30.e30.!!!",
		"bm90IGpzb24.e30.AA", strings.Repeat("a", MaxTokenSize+1),
	} {
		if _, err := Parse(s); !errors.Is(err, ErrMalformed) {
			t.Errorf("Parse(%.20q) = %v, want ErrMalformed", s, err)
		}
	}
}

func TestJWKRoundTrip(t *testing.T) {
	ec := ecKey(t, elliptic.P256())
	rs := rsaKey(t)
	for _, key := range []crypto.Signer{ec, rs} {
		kid, err := KeyID(key.Public())
		if err != nil {
			t.Fatal(err)
		}
		jwk, err := PublicJWK(key.Public(), kid)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(JWKS{Keys: []JWK{jwk}})
		var set JWKS
		if err := json.Unmarshal(data, &set); err != nil {
			t.Fatal(err)
		}
		pub, err := set.Keys[0].PublicKey()
		if err != nil {
			t.Fatal(err)
		}
		s, _ := Sign(key, kid, map[string]string{"a": "b"})
		tok, _ := Parse(s)
		if err := tok.Verify(pub); err != nil {
			t.Errorf("%T: token does not verify with the key from its JWK: %v", key, err)
		}
	}
}

func TestJWKRejectsBadKeys(t *testing.T) {
	for _, k := range []JWK{
		{Kty: "oct"},
		{Kty: "EC", Crv: "P-256", X: "AAAA", Y: "AAAA"}, // not on the curve
		{Kty: "EC", Crv: "secp256k1", X: "AA", Y: "AA"},
		{Kty: "RSA", N: "AQAB", E: "AQAB"}, // tiny modulus
		{Kty: "RSA", N: "!", E: "AQAB"},
	} {
		if _, err := k.PublicKey(); err == nil {
			t.Errorf("PublicKey(%+v) accepted a bad key", k)
		}
	}
}

// FuzzParse feeds arbitrary strings to Parse and Verify: neither may panic,
// and nothing but a signed token verifies.
func FuzzParse(f *testing.F) {
	key := ecKey(f, elliptic.P256())
	s, _ := Sign(key, "k", map[string]any{"sub": "x"})
	f.Add(s)
	f.Add("e30.e30.")
	f.Add("eyJhbGciOiJFUzI1NiJ9.e30.AAAA")
	f.Fuzz(func(t *testing.T, in string) {
		tok, err := Parse(in)
		if err != nil {
			return
		}
		if tok.Verify(key.Public()) == nil && in != s {
			t.Errorf("forged token %q verified", in)
		}
	})
}

// FuzzJWK feeds arbitrary key sets to PublicKey: no panics.
func FuzzJWK(f *testing.F) {
	f.Add(`{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}`)
	f.Add(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		var set JWKS
		if json.Unmarshal([]byte(in), &set) != nil {
			return
		}
		for _, k := range set.Keys {
			_, _ = k.PublicKey()
		}
	})
}
