package handler

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crdserver/crdserver/internal/storage"
)

// storageError turns a storage error into the Status a client sees.
func storageError(err error, gr schema.GroupResource, name, verb string) error {
	var st apierrors.APIStatus
	switch {
	case errors.As(err, &st):
		return err
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, storage.ErrExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, storage.ErrConflict):
		return apierrors.NewConflict(gr, name, errors.New(optimisticLockMsg))
	case errors.Is(err, storage.ErrUnavailable):
		// 503 as the watch cache answers, without Retry-After: the write
		// may have happened, and client-go repeats a request that names
		// one, which would turn a lost answer into a misleading 409.
		return apierrors.NewServiceUnavailable("storage is unavailable")
	default:
		return apierrors.NewInternalError(fmt.Errorf("%s %s: %w", verb, gr.String(), err))
	}
}

// optimisticLockMsg is upstream's text for a stale resourceVersion; clients
// match on it.
const optimisticLockMsg = "the object has been modified; please apply your changes to the latest version and try again"

// statusError builds a Status error with the given code, reason and message.
func statusError(code int32, reason metav1.StatusReason, msg string) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: code, Reason: reason, Message: msg,
	}}
}
