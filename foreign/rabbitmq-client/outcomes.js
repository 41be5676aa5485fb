'use strict';
// What rabbitmq-client hands the application, mapped to the peer protocol's outcomes. Kept apart
// from adapter.js so that test/outcomes.test.js can hold the mapping without a broker.

class ScenarioFailure extends Error {
  constructor(message) {
    super(message);
    this.name = 'ScenarioFailure';
  }
}

// A reply: `rpc.send()` resolves with the AsyncMessage the broker delivered to the caller's
// direct reply-to consumer. Channel#_onBody decodes the body by its content_type: JSON.parse for
// `application/json` (a parse error is swallowed: "this is a user problem", the body stays a
// Buffer), a string for `text/plain`, else the raw Buffer. What the stack could not decode is a
// Buffer: that is the decode error; anything else is the reply the application gets.
function outcomeOfReply(msg) {
  const body = msg ? msg.body : undefined;
  if (Buffer.isBuffer(body)) {
    const type = msg.contentType === undefined ? 'no content_type' : `content_type ${msg.contentType}`;
    const why = msg.contentType === 'application/json' ? 'JSON.parse failed and the library kept the bytes' : 'the library does not decode it';
    return { outcome: 'decode_error', error: `rabbitmq-client handed the application ${body.length} undecoded byte(s) (${type}): ${why}` };
  }
  return { outcome: 'reply', reply: body === undefined ? null : body };
}

// An error `rpc.send()` rejects with: RPC_TIMEOUT is the stack's own timeout
// (RPCProps.timeout, 30 s by default); RPC_CLOSED a call on a client closed or whose channel
// closed under it. Anything else is no outcome (null): the adapter answers ok: false.
function outcomeOfError(err) {
  const code = err && err.code;
  if (code === 'RPC_TIMEOUT') return { outcome: 'timeout' };
  if (code === 'RPC_CLOSED') return { outcome: 'closed' };
  return null;
}

// What the handler saw, as far as the stack lets it see: every AMQP property of the delivery,
// the headers as sent (nothing stripped), the body as decoded. The reply address is the native
// `reply_to` (reply() reads nothing else). The stack numbers no attempts: attempt is null.
function echoBody(msg, responder, peer) {
  let body = msg.body;
  if (Buffer.isBuffer(body)) body = body.toString('utf8');
  const has = body !== null && typeof body === 'object' && !Array.isArray(body)
    && Object.prototype.hasOwnProperty.call(body, 'correlationId');
  return {
    echo: body === undefined ? null : body,
    responder,
    peer,
    correlationId: has ? body.correlationId : null,
    seen: {
      message_id: msg.messageId === undefined ? null : msg.messageId,
      correlation_id: msg.correlationId === undefined ? null : msg.correlationId,
      reply_to: msg.replyTo === undefined ? null : msg.replyTo,
      reply_to_source: 'native',
      headers: Object.keys(msg.headers || {}).sort(),
      attempt: null,
    },
  };
}

module.exports = { ScenarioFailure, outcomeOfReply, outcomeOfError, echoBody };
