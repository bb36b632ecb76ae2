package ddbx

import (
	"errors"
	"strings"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// Cancellation reason codes of a TransactionCanceledException, as documented for
// TransactWriteItems.
const (
	ReasonNone                  = "None"
	ReasonConditionalCheck      = "ConditionalCheckFailed"
	ReasonTransactionConflict   = "TransactionConflict"
	ReasonThrottling            = "ThrottlingError"
	ReasonItemCollectionTooBig  = "ItemCollectionSizeLimitExceeded"
	ReasonProvisionedThroughput = "ProvisionedThroughputExceeded"
	ReasonValidation            = "ValidationError"
)

// IsConditionFailed reports whether err is (or wraps) a
// *ddbtypes.ConditionalCheckFailedException from a single-item write.
func IsConditionFailed(err error) bool {
	var e *ddbtypes.ConditionalCheckFailedException
	return errors.As(err, &e)
}

// ConditionFailedItem returns the item a failed single-item condition saw, when the
// write asked for it with ReturnValuesOnConditionCheckFailure ALL_OLD. ok is false
// when err is not a ConditionalCheckFailedException; item is nil when the item did
// not exist.
func ConditionFailedItem(err error) (item map[string]ddbtypes.AttributeValue, ok bool) {
	var e *ddbtypes.ConditionalCheckFailedException
	if !errors.As(err, &e) {
		return nil, false
	}
	return e.Item, true
}

// TxReasons returns the cancellation reasons of a *ddbtypes.TransactionCanceledException,
// one per action of the transaction in request order; ok is false when err is not one.
func TxReasons(err error) (reasons []ddbtypes.CancellationReason, ok bool) {
	var e *ddbtypes.TransactionCanceledException
	if !errors.As(err, &e) {
		return nil, false
	}
	return e.CancellationReasons, true
}

// TxReasonCode returns the cancellation code of action i of a cancelled transaction
// ("" when err is not a cancellation or has no reason for i).
func TxReasonCode(err error, i int) string {
	reasons, ok := TxReasons(err)
	if !ok || i < 0 || i >= len(reasons) || reasons[i].Code == nil {
		return ""
	}
	return *reasons[i].Code
}

// TxConditionFailed reports whether action i of a cancelled transaction failed its
// condition, and returns the item the condition saw when the action asked for it with
// ReturnValuesOnConditionCheckFailure ALL_OLD (nil when the item did not exist).
func TxConditionFailed(err error, i int) (item map[string]ddbtypes.AttributeValue, failed bool) {
	if TxReasonCode(err, i) != ReasonConditionalCheck {
		return nil, false
	}
	reasons, _ := TxReasons(err)
	return reasons[i].Item, true
}

// IsTxConflict reports whether err is a transaction cancelled only because of
// conflicts with concurrent writes (a TransactionConflict or throttling reason and
// no failed condition), or a TransactionInProgressException: a retry of the same
// transaction may succeed.
func IsTxConflict(err error) bool {
	var inProgress *ddbtypes.TransactionInProgressException
	if errors.As(err, &inProgress) {
		return true
	}
	var conflict *ddbtypes.TransactionConflictException
	if errors.As(err, &conflict) {
		return true
	}
	reasons, ok := TxReasons(err)
	if !ok {
		return false
	}
	retryable := false
	for _, r := range reasons {
		switch code(r.Code) {
		case ReasonNone, "":
		case ReasonTransactionConflict, ReasonThrottling, ReasonProvisionedThroughput:
			retryable = true
		default:
			return false
		}
	}
	return retryable
}

// IsThrottled reports whether err is a throttling error: a
// ProvisionedThroughputExceededException, RequestLimitExceeded, ThrottlingException
// (matched by the SDK's error code), or a transaction cancelled for throttling.
func IsThrottled(err error) bool {
	if isThrottleException(err) {
		return true
	}
	reasons, _ := TxReasons(err)
	for _, r := range reasons {
		if c := code(r.Code); c == ReasonThrottling || c == ReasonProvisionedThroughput {
			return true
		}
	}
	return false
}

func code(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// typeMismatch is the message of DynamoDB's refusal of an update expression
// whose operand is a stored attribute of another type (ADD to a string, say).
const typeMismatch = "incorrect data type"

// IsTypeMismatch reports whether err is DynamoDB's refusal of an update whose
// expression met a stored attribute of another type than it operates on (a
// ValidationException, or a transaction's ValidationError reason, saying "An
// operand in the update expression has an incorrect data type"). The
// expressions of this module are typed right, so it means a corrupt item (an
// attribute written by hand).
func IsTypeMismatch(err error) bool {
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ValidationException" && strings.Contains(api.ErrorMessage(), typeMismatch) {
		return true
	}
	reasons, _ := TxReasons(err)
	for _, r := range reasons {
		if r.Code != nil && *r.Code == ReasonValidation && r.Message != nil && strings.Contains(*r.Message, typeMismatch) {
			return true
		}
	}
	return false
}
