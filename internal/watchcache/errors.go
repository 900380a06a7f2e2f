package watchcache

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crdserver/crdserver/internal/storage"
)

// Messages clients read; they match kube-apiserver's and must not change.
const (
	msgListExpired     = "The resourceVersion for the provided list is too old."
	msgWatchExpired    = "The resourceVersion for the provided watch is too old."
	msgContinueExpired = "The provided continue parameter is too old " +
		"to display a consistent list result. You can start a new list without " +
		"the continue parameter."
	msgInconsistentContinue = "The provided continue parameter is too old " +
		"to display a consistent list result. You can start a new list without " +
		"the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided " +
		"token results in an inconsistent list - objects that were created, " +
		"modified, or deleted between the time the first chunk was returned " +
		"and now may show up in the list."
)

// errTooLargeRV is upstream's answer to a read of a revision the cache
// did not reach in time: 504 Timeout with a ResourceVersionTooLarge cause,
// which clients retry.
func errTooLargeRV(want, current int64) *apierrors.StatusError {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", want, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type:    metav1.CauseTypeResourceVersionTooLarge,
		Message: "Too large resource version",
	}}
	return err
}

// IsTooLargeResourceVersion reports whether err is errTooLargeRV's kind.
func IsTooLargeResourceVersion(err error) bool {
	return apierrors.IsTimeout(err) && apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
}

func errWatchTooOld(rev, oldest int64) *apierrors.StatusError {
	return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rev, oldest))
}

func errWatchExpired() *apierrors.StatusError { return apierrors.NewResourceExpired(msgWatchExpired) }

// errContinueCompacted is the 410 for a continue token whose revision is
// compacted: it carries a token that continues from the same key at the
// latest revision (rv -1), as upstream does.
func errContinueCompacted(listPrefix, startKey string) *apierrors.StatusError {
	tok, err := encodeContinue(startKey, listPrefix, -1)
	if err != nil {
		return apierrors.NewResourceExpired(msgContinueExpired)
	}
	se := apierrors.NewResourceExpired(msgInconsistentContinue)
	se.ErrStatus.ListMeta.Continue = tok
	return se
}

func errNotReady() *apierrors.StatusError {
	return apierrors.NewTooManyRequests("storage is (re)initializing", 1)
}

func errStopped() *apierrors.StatusError {
	return apierrors.NewServiceUnavailable("watch cache is stopped")
}

// storageErr turns a storage failure into a Status error; the cause of an
// internal error goes to the log, not to the client.
func (c *Cache) storageErr(op string, err error) error {
	var se apierrors.APIStatus
	switch {
	case errors.As(err, &se):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError("request did not complete within requested timeout - context deadline exceeded", 0)
	case errors.Is(err, storage.ErrUnavailable):
		c.log.Error("watchcache: storage unavailable", "op", op, "err", err)
		return apierrors.NewServiceUnavailable("storage is unavailable")
	}
	c.log.Error("watchcache: storage failed", "op", op, "err", err)
	return apierrors.NewInternalError(errors.New("storage error"))
}
