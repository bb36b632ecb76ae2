package ddbx

import (
	"errors"
	"fmt"
	"testing"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

func str(s string) *string { return &s }

func opErr(err error) error {
	return fmt.Errorf("wrapped: %w", &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "X", Err: err})
}

func txErr(codes ...string) error {
	reasons := make([]ddbtypes.CancellationReason, len(codes))
	for i, c := range codes {
		reasons[i].Code = str(c)
		if c == ReasonConditionalCheck {
			reasons[i].Item = map[string]ddbtypes.AttributeValue{"v": &ddbtypes.AttributeValueMemberN{Value: "1"}}
		}
	}
	return opErr(&ddbtypes.TransactionCanceledException{CancellationReasons: reasons})
}

func TestClassification(t *testing.T) {
	item := map[string]ddbtypes.AttributeValue{"v": &ddbtypes.AttributeValueMemberN{Value: "1"}}
	for _, tc := range []struct {
		name                      string
		err                       error
		cond, conflict, throttled bool
		condItem                  bool
		tx0, tx1                  bool // TxConditionFailed for actions 0 and 1
	}{
		{name: "nil", err: nil},
		{name: "plain", err: errors.New("ConditionalCheckFailedException")},
		{name: "condition", err: opErr(&ddbtypes.ConditionalCheckFailedException{Item: item}), cond: true, condItem: true},
		{name: "condition no item", err: opErr(&ddbtypes.ConditionalCheckFailedException{}), cond: true},
		{name: "tx condition", err: txErr(ReasonNone, ReasonConditionalCheck), tx1: true},
		{name: "tx conflict", err: txErr(ReasonTransactionConflict, ReasonNone), conflict: true},
		{name: "tx conflict and condition", err: txErr(ReasonTransactionConflict, ReasonConditionalCheck), tx1: true},
		{name: "tx throttled", err: txErr(ReasonThrottling, ReasonNone), conflict: true, throttled: true},
		{name: "tx validation", err: txErr(ReasonValidation)},
		{name: "in progress", err: opErr(&ddbtypes.TransactionInProgressException{}), conflict: true},
		{name: "throughput", err: opErr(&ddbtypes.ProvisionedThroughputExceededException{}), throttled: true},
		{name: "request limit", err: opErr(&ddbtypes.RequestLimitExceeded{}), throttled: true},
		{name: "throttling code", err: opErr(&smithy.GenericAPIError{Code: "ThrottlingException"}), throttled: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsConditionFailed(tc.err); got != tc.cond {
				t.Errorf("IsConditionFailed = %v", got)
			}
			it, ok := ConditionFailedItem(tc.err)
			if ok != tc.cond || (it != nil) != tc.condItem {
				t.Errorf("ConditionFailedItem = %v, %v", it, ok)
			}
			if got := IsTxConflict(tc.err); got != tc.conflict {
				t.Errorf("IsTxConflict = %v", got)
			}
			if got := IsThrottled(tc.err); got != tc.throttled {
				t.Errorf("IsThrottled = %v", got)
			}
			for i, want := range []bool{tc.tx0, tc.tx1} {
				it, failed := TxConditionFailed(tc.err, i)
				if failed != want || (failed && it == nil) {
					t.Errorf("TxConditionFailed(%d) = %v, %v", i, it, failed)
				}
			}
			if _, failed := TxConditionFailed(tc.err, 7); failed {
				t.Error("TxConditionFailed out of range")
			}
		})
	}
}
