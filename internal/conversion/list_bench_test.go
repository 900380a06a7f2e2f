package conversion_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/crdserver/crdserver/internal/conversion"
	"github.com/crdserver/crdserver/internal/webhook"
)

// BenchmarkWebhookList10000 is the first conversion of a list of 10,000
// objects of about 2KB by a webhook in the same process (nothing cached).
func BenchmarkWebhookList10000(b *testing.B) {
	objs := make([]conversion.Object, 10000)
	pad := strings.Repeat("x", 1800)
	for i := range objs {
		js := margherita("p"+strconv.Itoa(i), i+1)
		js = []byte(strings.Replace(string(js), `"spec":{`, `"spec":{"pad":"`+pad+`",`, 1))
		objs[i] = conversion.Object{JSON: js, Key: "/p" + strconv.Itoa(i), Revision: int64(i + 1)} // stored, as a list's
	}
	_, def, _ := startPizzaWebhook(b, nil)
	m := &webhook.Manager{}
	for b.Loop() {
		// A converter of its own each time: one shared would answer from
		// the conversions it kept after the first.
		conv := conversion.New(def, m)
		if _, err := conv.Convert(context.Background(), group+"/v1beta1", objs); err != nil {
			b.Fatal(err)
		}
	}
}
