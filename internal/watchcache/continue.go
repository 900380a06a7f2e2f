package watchcache

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
)

// continueToken is the wire form of a continue parameter, the same as
// kube-apiserver's so tokens are interchangeable: base64url (no padding) of
// {"v":"meta.k8s.io/v1","rv":N,"start":"<key after the list prefix>"}.
// rv -1 means "continue at the latest revision" (handed out when the
// original revision was compacted).
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

const continueVersion = "meta.k8s.io/v1"

var errBadContinue = errors.New("continue key is not valid")

// encodeContinue returns the token that resumes a list under listPrefix at
// key (inclusive) and revision rev.
func encodeContinue(key, listPrefix string, rev int64) (string, error) {
	start, ok := strings.CutPrefix(key, listPrefix)
	if !ok || start == "" {
		return "", fmt.Errorf("key %q is not under list prefix %q", key, listPrefix)
	}
	b, err := json.Marshal(continueToken{APIVersion: continueVersion, ResourceVersion: rev, StartKey: start})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// decodeContinue parses a token into the full start key and revision. The
// start key is cleaned as a path so a client can't climb above listPrefix.
func decodeContinue(tok, listPrefix string) (string, int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %v", errBadContinue, err)
	}
	var c continueToken
	if err := json.Unmarshal(b, &c); err != nil {
		return "", 0, fmt.Errorf("%w: %v", errBadContinue, err)
	}
	if c.APIVersion != continueVersion {
		return "", 0, fmt.Errorf("%w: server does not recognize this encoded version %v", errBadContinue, c.APIVersion)
	}
	if c.ResourceVersion == 0 {
		return "", 0, fmt.Errorf("%w: incorrect encoded start resourceVersion (version meta.k8s.io/v1)", errBadContinue)
	}
	if c.StartKey == "" {
		return "", 0, fmt.Errorf("%w: encoded start key empty (version meta.k8s.io/v1)", errBadContinue)
	}
	key := c.StartKey
	if !strings.HasPrefix(key, "/") {
		key = "/" + key
	}
	if cleaned := path.Clean(key); cleaned != key {
		return "", 0, fmt.Errorf("%w: %v", errBadContinue, c.StartKey)
	}
	return listPrefix + key[1:], c.ResourceVersion, nil
}
