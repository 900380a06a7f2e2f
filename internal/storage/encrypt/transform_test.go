package encrypt

import (
	"bytes"
	"crypto/aes"
	stdcipher "crypto/cipher"
	"encoding/base64"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/crypto/nacl/secretbox"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func line() string {
	_, _, l, _ := runtime.Caller(1)
	return fmt.Sprintf("line %d", l)
}

var (
	key16  = bytes.Repeat([]byte{1}, 16)
	key32  = bytes.Repeat([]byte{2}, 32)
	key32b = bytes.Repeat([]byte{3}, 32)
)

func b64(k []byte) string { return base64.StdEncoding.EncodeToString(k) }

// configFor is an EncryptionConfiguration for secrets with providers.
func configFor(t *testing.T, providers string) *Transformer {
	t.Helper()
	c, err := ParseConfig([]byte(`
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
` + providers))
	if err != nil {
		t.Fatal(err)
	}
	return c.For(schema.GroupResource{Resource: "secrets"})
}

const secretKey = "/registry/secrets/default/s1"

var plain = []byte(`{"apiVersion":"v1","kind":"Secret","data":{"password":"aHVudGVyMg=="}}`)

// Fixtures written the way upstream's documentation describes each
// format, with the standard library's primitives directly, not with this
// package's ciphers: values kube-apiserver wrote must read back.
func upstreamAESGCM(t *testing.T, key []byte, name string) []byte {
	block, _ := aes.NewCipher(key)
	aead, _ := stdcipher.NewGCM(block)
	nonce := bytes.Repeat([]byte{7}, 12)
	// Upstream authenticates the etcd key as additional data.
	return append([]byte("k8s:enc:aesgcm:v1:"+name+":"+string(nonce)), aead.Seal(nil, nonce, plain, []byte(secretKey))...)
}

func upstreamAESCBC(t *testing.T, key []byte, name string) []byte {
	block, _ := aes.NewCipher(key)
	iv := bytes.Repeat([]byte{9}, 16)
	pad := 16 - len(plain)%16
	padded := append(bytes.Clone(plain), bytes.Repeat([]byte{byte(pad)}, pad)...)
	out := make([]byte, len(padded))
	stdcipher.NewCBCEncrypter(block, iv).CryptBlocks(out, padded)
	return append([]byte("k8s:enc:aescbc:v1:"+name+":"+string(iv)), out...)
}

func upstreamSecretbox(t *testing.T, key []byte, name string) []byte {
	var k [32]byte
	var nonce [24]byte
	copy(k[:], key)
	copy(nonce[:], bytes.Repeat([]byte{5}, 24))
	return secretbox.Seal([]byte("k8s:enc:secretbox:v1:"+name+":"+string(nonce[:])), plain, &nonce, &k)
}

func TestProviders(t *testing.T) {
	for _, tc := range []struct {
		name      string
		providers string
		prefix    string
		upstream  []byte // written by upstream's format, must read back
	}{
		{line(), "  - aesgcm: {keys: [{name: k1, secret: " + b64(key16) + "}]}\n", "k8s:enc:aesgcm:v1:k1:", upstreamAESGCM(t, key16, "k1")},
		{line(), "  - aesgcm: {keys: [{name: k1, secret: " + b64(key32) + "}]}\n", "k8s:enc:aesgcm:v1:k1:", upstreamAESGCM(t, key32, "k1")},
		{line(), "  - aescbc: {keys: [{name: k1, secret: " + b64(key32) + "}]}\n", "k8s:enc:aescbc:v1:k1:", upstreamAESCBC(t, key32, "k1")},
		{line(), "  - secretbox: {keys: [{name: k1, secret: " + b64(key32) + "}]}\n", "k8s:enc:secretbox:v1:k1:", upstreamSecretbox(t, key32, "k1")},
		{line(), "  - identity: {}\n", "", plain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := configFor(t, tc.providers)
			stored, err := tr.ToStorage(secretKey, plain)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(stored, []byte(tc.prefix)) {
				t.Errorf("stored value starts %q, want prefix %q", stored[:min(len(stored), 30)], tc.prefix)
			}
			if tc.prefix != "" && bytes.Contains(stored, []byte("aHVudGVyMg==")) {
				t.Error("the secret's data is readable in the stored value")
			}
			for what, v := range map[string][]byte{"own": stored, "upstream's": tc.upstream} {
				got, stale, err := tr.FromStorage(secretKey, v)
				if err != nil || !bytes.Equal(got, plain) || stale {
					t.Errorf("reading %s value: %q stale=%v err=%v", what, got, stale, err)
				}
			}
			// Two writes of one value differ: nonces are not reused.
			if again, _ := tr.ToStorage(secretKey, plain); tc.prefix != "" && bytes.Equal(again, stored) {
				t.Error("two encryptions of the same value are equal")
			}
		})
	}
}

func TestRotation(t *testing.T) {
	old := configFor(t, "  - aescbc: {keys: [{name: old, secret: "+b64(key32)+"}]}\n")
	// Step 1 of upstream's rotation: the new key is added second, so every
	// server reads it before any writes it; step 2 puts it first.
	rotated := configFor(t, "  - aescbc: {keys: [{name: new, secret: "+b64(key32b)+"}, {name: old, secret: "+b64(key32)+"}]}\n  - identity: {}\n")
	byOld, _ := old.ToStorage(secretKey, plain)
	for _, tc := range []struct {
		name      string
		stored    []byte
		wantStale bool
	}{
		{line(), byOld, true},
		{line(), plain, true}, // written before encryption was turned on
		{line(), mustStore(t, rotated), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, stale, err := rotated.FromStorage(secretKey, tc.stored)
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("read %q, %v", got, err)
			}
			if stale != tc.wantStale {
				t.Errorf("stale = %v, want %v", stale, tc.wantStale)
			}
		})
	}
	// Once the old key is removed, what it wrote no longer reads.
	if _, _, err := configFor(t, "  - aescbc: {keys: [{name: new, secret: "+b64(key32b)+"}]}\n").FromStorage(secretKey, byOld); err == nil {
		t.Error("a value of a removed key was read")
	}
}

func mustStore(t *testing.T, tr *Transformer) []byte {
	v, err := tr.ToStorage(secretKey, plain)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestFromStorageErrors(t *testing.T) {
	gcm := configFor(t, "  - aesgcm: {keys: [{name: k1, secret: "+b64(key32)+"}]}\n")
	sealed := mustStore(t, gcm)
	tampered := bytes.Clone(sealed)
	tampered[len(tampered)-1] ^= 1
	for _, tc := range []struct {
		name   string
		tr     *Transformer
		key    string
		stored []byte
		want   string
	}{
		{line(), gcm, secretKey, tampered, "message authentication failed"},
		// The etcd key is authenticated: a value moved to another key fails.
		{line(), gcm, "/registry/secrets/default/other", sealed, "message authentication failed"},
		{line(), gcm, secretKey, plain, "not encrypted and identity is not a provider"},
		{line(), gcm, secretKey, []byte("k8s:enc:aesgcm:v1:k2:xxxxxxxxxxxxxxxxxxxxxxxxxxxx"), "no key of that name"},
		{line(), gcm, secretKey, []byte("k8s:enc:aesgcm:v1:k1:short"), "shorter than the required size"},
		{line(), configFor(t, "  - identity: {}\n"), secretKey, sealed, "encrypted with a provider that is not configured"},
		{line(), configFor(t, "  - aescbc: {keys: [{name: k1, secret: "+b64(key32)+"}]}\n"), secretKey, []byte("k8s:enc:aescbc:v1:k1:0123456789abcdef0123456789abcdef012"), "not a multiple of the block size"},
		{line(), configFor(t, "  - secretbox: {keys: [{name: k1, secret: "+b64(key32)+"}]}\n"), secretKey, append([]byte("k8s:enc:secretbox:v1:k1:"), make([]byte, 60)...), "authentication failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := tc.tr.FromStorage(tc.key, tc.stored)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestParseConfig(t *testing.T) {
	head := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"
	for _, tc := range []struct {
		name, config, want string
	}{
		{line(), "apiVersion: v1\nkind: EncryptionConfiguration\nresources: []", "want apiVersion apiserver.config.k8s.io/v1"},
		{line(), head + "- resources: [secrets]\n  providers: []", "at least one provider"},
		{line(), head + "- resources: [secrets]\n  providers: [{aescbc: {keys: [{name: k, secret: " + b64(key16[:7]) + "}]}}]", "invalid key size 7"},
		{line(), head + "- resources: [secrets]\n  providers: [{secretbox: {keys: [{name: k, secret: " + b64(key16) + "}]}}]", "expected key size 32"},
		{line(), head + "- resources: [secrets]\n  providers: [{aesgcm: {keys: [{name: k, secret: '!!'}]}}]", "not base64"},
		{line(), head + "- resources: [secrets]\n  providers: [{aesgcm: {keys: [{name: 'a:b', secret: " + b64(key16) + "}]}}]", "contain no colon"},
		{line(), head + "- resources: [secrets]\n  providers: [{aesgcm: {keys: []}}]", "at least one key"},
		{line(), head + "- resources: [secrets]\n  providers: [{identity: {}, aesgcm: {keys: [{name: k, secret: " + b64(key16) + "}]}}]", "exactly one provider"},
		{line(), head + "- resources: [secrets]\n  providers: [{kms: {name: x}}]", "kms: not supported"},
		{line(), head + "- resources: ['*.apps']\n  providers: [{identity: {}}]\n- resources: [deployments.apps]\n  providers: [{identity: {}}]", `masked by earlier rule "*.apps"`},
		{line(), head + "- resources: ['*.*']\n  providers: [{identity: {}}]\n- resources: [secrets]\n  providers: [{identity: {}}]", `masked by earlier rule "*.*"`},
		{line(), head + "- resources: ['sec*']\n  providers: [{identity: {}}]", "want resource.group"},
		{line(), head + "- resources: [secrets]\n  provider: [{identity: {}}]", "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.config))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestFor(t *testing.T) {
	c, err := ParseConfig([]byte(`
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets, widgets.example.com]
  providers: [{secretbox: {keys: [{name: a, secret: ` + b64(key32) + `}]}}]
- resources: ['*.apps']
  providers: [{aescbc: {keys: [{name: b, secret: ` + b64(key32) + `}]}}]
- resources: ['*.']
  providers: [{aesgcm: {keys: [{name: c, secret: ` + b64(key32) + `}]}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		gr     schema.GroupResource
		prefix string // "" means not encrypted
	}{
		{line(), schema.GroupResource{Resource: "secrets"}, "k8s:enc:secretbox:v1:a:"},
		{line(), schema.GroupResource{Group: "example.com", Resource: "widgets"}, "k8s:enc:secretbox:v1:a:"},
		{line(), schema.GroupResource{Group: "apps", Resource: "deployments"}, "k8s:enc:aescbc:v1:b:"},
		{line(), schema.GroupResource{Resource: "configmaps"}, "k8s:enc:aesgcm:v1:c:"},
		{line(), schema.GroupResource{Group: "example.com", Resource: "gadgets"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := c.For(tc.gr)
			if tc.prefix == "" {
				if tr != nil {
					t.Error("a resource the configuration does not list is encrypted")
				}
				return
			}
			if v := mustStore(t, tr); !bytes.HasPrefix(v, []byte(tc.prefix)) {
				t.Errorf("stored as %q, want prefix %q", v[:30], tc.prefix)
			}
		})
	}
}

func FuzzFromStorage(f *testing.F) {
	tr, err := ParseConfig([]byte(`
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aesgcm: {keys: [{name: k1, secret: ` + b64(key32) + `}]}
  - aescbc: {keys: [{name: k1, secret: ` + b64(key32) + `}]}
  - secretbox: {keys: [{name: k1, secret: ` + b64(key32) + `}]}
  - identity: {}
`))
	if err != nil {
		f.Fatal(err)
	}
	t := tr.For(schema.GroupResource{Resource: "secrets"})
	f.Add([]byte("k8s:enc:aesgcm:v1:k1:0123456789ab"))
	f.Add([]byte("k8s:enc:aescbc:v1:k1:0123456789abcdef0123456789abcdef"))
	f.Add([]byte("k8s:enc:secretbox:v1:k1:"))
	f.Add(plain)
	f.Fuzz(func(tt *testing.T, stored []byte) {
		// Hostile stored bytes fail cleanly, never panic.
		t.FromStorage(secretKey, stored)
	})
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets, '*.apps']\n  providers: [{aesgcm: {keys: [{name: k, secret: " + b64(key32) + "}]}}, {identity: {}}]"))
	f.Add([]byte("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: ['*.*']\n  providers: [{secretbox: {keys: [{name: k, secret: " + b64(key32) + "}]}}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		// Whatever parses encrypts and decrypts what it wrote.
		for _, gr := range []schema.GroupResource{{Resource: "secrets"}, {Group: "apps", Resource: "deployments"}, {Group: "x", Resource: "y"}} {
			tr := c.For(gr)
			if tr == nil {
				continue
			}
			v, err := tr.ToStorage(secretKey, plain)
			if err != nil {
				t.Fatal(err)
			}
			if got, _, err := tr.FromStorage(secretKey, v); err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("round trip for %v: %q, %v", gr, got, err)
			}
		}
	})
}
