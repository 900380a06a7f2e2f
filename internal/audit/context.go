package audit

import (
	"context"
	"maps"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
)

type idKey struct{}

// WithID returns a context carrying a request's audit ID.
func WithID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, idKey{}, id)
}

// IDFrom returns the audit ID stored by WithID, or "".
func IDFrom(ctx context.Context) string {
	id, _ := ctx.Value(idKey{}).(string)
	return id
}

// Annotations collects the annotations later steps add to a request's
// events. It is safe for concurrent use: a watch's handler may annotate
// while the filter writes the ResponseStarted event.
type Annotations struct {
	mu sync.Mutex
	m  map[string]string
	// impersonated is the user the request acts as, once impersonation
	// has granted it.
	impersonated *authenticationv1.UserInfo
}

type annotationsKey struct{}

// WithAnnotations returns a context into which AddAnnotation writes a.
func WithAnnotations(ctx context.Context, a *Annotations) context.Context {
	return context.WithValue(ctx, annotationsKey{}, a)
}

// AddAnnotation records key=value on the request's audit events; the
// first value of a key wins. Without an audited request in ctx it does
// nothing.
func AddAnnotation(ctx context.Context, key, value string) {
	a, _ := ctx.Value(annotationsKey{}).(*Annotations)
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.m[key]; ok {
		return
	}
	if a.m == nil {
		a.m = map[string]string{}
	}
	a.m[key] = value
}

// Snapshot is a copy of the annotations so far, nil when there are none;
// events keep their own copy because they are encoded later.
func (a *Annotations) Snapshot() map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.m) == 0 {
		return nil
	}
	return maps.Clone(a.m)
}

// SetImpersonatedUser records the user an impersonating request acts as,
// for its events' impersonatedUser: the impersonation step calls it once
// every ask is allowed, as upstream's does. Without an audited request in
// ctx it does nothing.
func SetImpersonatedUser(ctx context.Context, u authenticationv1.UserInfo) {
	a, _ := ctx.Value(annotationsKey{}).(*Annotations)
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.impersonated = &u
}

// ImpersonatedUser is the user SetImpersonatedUser recorded, or nil.
func (a *Annotations) ImpersonatedUser() *authenticationv1.UserInfo {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.impersonated
}
