package admission

import (
	"encoding/base64"
	"encoding/json"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crdserver/crdserver/internal/codec"
)

// decodeAnswer decodes a webhook's AdmissionReview as encoding/json
// does. The answers of nearly every call (compact, allowing, maybe with a
// patch, warnings or audit annotations) are read by quickAnswer without
// reflection, which was a seventh of a call's own CPU; anything else (a
// null, a member of another spelling or type, white space) goes to
// encoding/json, so that it decodes, or fails, exactly as before.
func decodeAnswer(answer []byte) (*admissionv1.AdmissionReview, error) {
	if r, ok := quickAnswer(answer); ok {
		return r, nil
	}
	var r admissionv1.AdmissionReview
	if err := json.Unmarshal(answer, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// quickAnswer decodes the common answers; ok false leaves the answer to
// encoding/json.
func quickAnswer(answer []byte) (r *admissionv1.AdmissionReview, ok bool) {
	r = &admissionv1.AdmissionReview{}
	str := func(v []byte, to *string) bool {
		s, ok := codec.StringValue(v)
		*to = s
		return ok
	}
	fine := true
	ok = codec.EachMember(answer, func(name string, v []byte) bool {
		switch name {
		case "apiVersion":
			fine = str(v, &r.APIVersion)
		case "kind":
			fine = str(v, &r.Kind)
		case "response":
			r.Response, fine = quickResponse(v)
		default:
			fine = false
		}
		return fine
	})
	return r, ok && fine
}

func quickResponse(v []byte) (*admissionv1.AdmissionResponse, bool) {
	resp := &admissionv1.AdmissionResponse{}
	fine := true
	ok := codec.EachMember(v, func(name string, v []byte) bool {
		switch name {
		case "uid":
			var uid string
			uid, fine = codec.StringValue(v)
			resp.UID = types.UID(uid)
		case "allowed":
			switch string(v) {
			case "true":
				resp.Allowed = true
			case "false":
				resp.Allowed = false
			default:
				fine = false
			}
		case "patch":
			var s string
			if s, fine = codec.StringValue(v); fine {
				var err error
				resp.Patch, err = base64.StdEncoding.DecodeString(s)
				fine = err == nil
			}
		case "patchType":
			var s string
			s, fine = codec.StringValue(v)
			pt := admissionv1.PatchType(s)
			resp.PatchType = &pt
		case "warnings":
			resp.Warnings = []string{}
			ok := codec.EachElement(v, func(e []byte) bool {
				var s string
				s, fine = codec.StringValue(e)
				resp.Warnings = append(resp.Warnings, s)
				return fine
			})
			fine = fine && ok
		case "auditAnnotations":
			if resp.AuditAnnotations == nil {
				resp.AuditAnnotations = map[string]string{}
			}
			ok := codec.EachMember(v, func(k string, e []byte) bool {
				var s string
				s, fine = codec.StringValue(e)
				resp.AuditAnnotations[k] = s
				return fine
			})
			fine = fine && ok
		case "status":
			// A Status is decoded as encoding/json would decode it
			// inside the review: most webhooks that allow say so with
			// one (controller-runtime's, code 200).
			if resp.Result == nil {
				resp.Result = &metav1.Status{}
			}
			fine = json.Unmarshal(v, resp.Result) == nil
		default:
			fine = false
		}
		return fine
	})
	return resp, ok && fine
}
