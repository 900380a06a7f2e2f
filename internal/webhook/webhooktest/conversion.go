package webhooktest

import (
	"encoding/json"
	"net/http"
)

// ConvertFunc converts one object to apiVersion to.
type ConvertFunc func(obj map[string]any, to string) (map[string]any, error)

// Review is a ConversionReview as a test webhook reads and answers it.
type Review struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Request    *ReviewRequest  `json:"request,omitempty"`
	Response   *ReviewResponse `json:"response,omitempty"`
}

type ReviewRequest struct {
	UID               string           `json:"uid"`
	DesiredAPIVersion string           `json:"desiredAPIVersion"`
	Objects           []map[string]any `json:"objects"`
}

type ReviewResponse struct {
	UID              string           `json:"uid"`
	ConvertedObjects []map[string]any `json:"convertedObjects,omitempty"`
	Result           Result           `json:"result"`
}

type Result struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// Conversion serves ConversionReviews (v1 or v1beta1, answered in the
// version asked) by calling convert on every object; an error fails the
// review with its message, as the seed's webhook does. edit, when not
// nil, may change the answer before it is sent (to test a server's
// checks).
func Conversion(convert ConvertFunc, edit func(*Review)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rev Review
		if err := json.NewDecoder(r.Body).Decode(&rev); err != nil || rev.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		resp := &ReviewResponse{UID: rev.Request.UID, Result: Result{Status: "Success"}}
		for _, o := range rev.Request.Objects {
			out, err := convert(o, rev.Request.DesiredAPIVersion)
			if err != nil {
				resp.ConvertedObjects = nil
				resp.Result = Result{Status: "Failed", Message: err.Error()}
				break
			}
			resp.ConvertedObjects = append(resp.ConvertedObjects, out)
		}
		ans := Review{APIVersion: rev.APIVersion, Kind: "ConversionReview", Response: resp}
		if edit != nil {
			edit(&ans)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(ans)
	})
}
