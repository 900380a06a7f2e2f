package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/crdserver/crdserver/internal/storage"
)

// minVersion is the oldest etcd crdserver accepts. Earlier releases have
// bugs in watch progress requests (etcd-io/etcd#15220 and later fixes: a
// progress notification could overtake the events of its revision), which
// would let the watch cache declare itself fresh while missing events.
// Kubernetes asks for the same release before it trusts progress requests.
var minVersion = [3]int{3, 5, 13}

// checkVersions asks every endpoint for its version. Endpoints that do not
// answer are skipped (the client fails over to the others), but at least
// one must answer, and every one that answers must be new enough.
func checkVersions(ctx context.Context, m clientv3.Maintenance, endpoints []string) error {
	var errs []error
	answered := false
	for _, ep := range endpoints {
		resp, err := m.Status(ctx, ep)
		if err != nil {
			errs = append(errs, fmt.Errorf("etcd at %s: %w", ep, err))
			continue
		}
		answered = true
		if err := checkVersion(ep, resp.Version); err != nil {
			return err
		}
	}
	if !answered {
		return fmt.Errorf("etcd: %w: %w", storage.ErrUnavailable, errors.Join(errs...))
	}
	return nil
}

// checkVersion rejects an etcd release older than minVersion. Pre-release
// suffixes ("3.6.0-rc.1") are ignored: a release candidate of a supported
// minor carries the fixes of its branch.
func checkVersion(endpoint, version string) error {
	v, err := parseVersion(version)
	if err != nil {
		return fmt.Errorf("etcd at %s reports version %q: %w", endpoint, version, err)
	}
	for i := range v {
		if v[i] != minVersion[i] {
			if v[i] > minVersion[i] {
				return nil
			}
			return fmt.Errorf("etcd at %s is version %s; crdserver needs etcd %d.%d.%d or newer (watch progress notifications)",
				endpoint, version, minVersion[0], minVersion[1], minVersion[2])
		}
	}
	return nil
}

func parseVersion(s string) ([3]int, error) {
	var v [3]int
	s = strings.TrimPrefix(s, "v")
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return v, errors.New("not major.minor.patch")
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, fmt.Errorf("bad number %q", p)
		}
		v[i] = n
	}
	return v, nil
}
