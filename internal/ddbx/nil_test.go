package ddbx

import (
	"testing"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

func TestIsNil(t *testing.T) {
	var typed *ddb.Client
	var api TableAPI = typed
	for _, tc := range []struct {
		name   string
		client any
		want   bool
	}{
		{"nil", nil, true},
		{"typed nil", typed, true},
		{"typed nil in interface", api, true},
		{"client", ddb.New(ddb.Options{}), false},
		{"value", struct{}{}, false},
	} {
		if got := IsNil(tc.client); got != tc.want {
			t.Errorf("%s: IsNil = %v, want %v", tc.name, got, tc.want)
		}
	}
}
