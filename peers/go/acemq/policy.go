package acemq

import "acemq-interop/peers/go/internal/policy"

// The options types carry an unexported policy that only this module can set
// (through internal/policy): a service always gets the wire spec's behaviour.
// A requester or responder resolves it once, when it is opened, and its code
// paths read the policy's fields.
func init() {
	policy.RegisterRequester(func(o interface{}, p policy.Requester) interface{} {
		opts := o.(RequesterOptions)
		opts.policy = &p
		return opts
	})
	policy.RegisterResponder(func(o interface{}, p policy.Responder) interface{} {
		opts := o.(ResponderOptions)
		p.ReadOrder = append([]policy.Source(nil), p.ReadOrder...)
		opts.policy = &p
		return opts
	})
}

func (o RequesterOptions) resolvePolicy() policy.Requester {
	if o.policy != nil {
		return *o.policy
	}
	return policy.DefaultRequester()
}

func (o ResponderOptions) resolvePolicy() policy.Responder {
	if o.policy != nil {
		return *o.policy
	}
	return policy.DefaultResponder()
}
