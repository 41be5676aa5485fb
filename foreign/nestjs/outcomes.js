// What NestJS's RMQ transport hands the application, mapped to the peer protocol's outcomes.
// Kept apart from adapter.js so that test/outcomes.test.js can hold the mapping without a broker.
import { EmptyError, TimeoutError } from 'rxjs';

// A call ends in one of three ways for the application (`lastValueFrom(client.send(...))`):
// - the Observable's last value: the reply, as ClientRMQ#parseMessageContent and the
//   IncomingResponseDeserializer made it (a body that is not JSON arrives as its raw text: an
//   empty acemq failure body is the string "", with no error); completed with no value
//   (a Nest packet {isDisposed: true} alone) is EmptyError: a reply with nothing in it, null;
// - an error: rxjs `timeout()`'s TimeoutError (the docs' way to bound a call; send() has no
//   timeout of its own); the reply's `err` field, a plain value from JSON (a string, or the
//   {status, message} object BaseRpcExceptionFilter makes of an RpcException), is the responder
//   failing; ClientRMQ#handleClose's Error('Connection closed') is a call pending at close.
export function outcomeOfValue(value) {
  return { outcome: 'reply', reply: value === undefined ? null : value };
}

export function outcomeOfError(err, { closing = false } = {}) {
  if (err instanceof TimeoutError) return { outcome: 'timeout' };
  if (err instanceof EmptyError) return { outcome: 'reply', reply: null };
  if (err instanceof Error) {
    if (closing && err.message === 'Connection closed') return { outcome: 'closed' };
    return null; // the stack's own failure, not the responder's: the call is refused (ok: false)
  }
  return { outcome: 'responder_failed', failure: failureText(err) };
}

// The text of a reply's `err`: a string as it is, the `message` of an object that has one
// (BaseRpcExceptionFilter's {status: 'error', message}), else the JSON of what came.
export function failureText(err) {
  if (typeof err === 'string') return err;
  if (err !== null && typeof err === 'object' && typeof err.message === 'string') return err.message;
  return JSON.stringify(err === undefined ? null : err);
}

export class ScenarioFailure extends Error {
  constructor(message) {
    super(message);
    this.name = 'ScenarioFailure';
  }
}

// What the @MessagePattern handler saw: `data` (the packet's data, as Nest's
// IncomingRequestDeserializer made it) and, through RmqContext, the delivery's AMQP properties
// (nothing stripped). The reply address is the native `reply_to` (ServerRMQ reads nothing else);
// Nest numbers no attempts: attempt is null.
export function echoBody(data, message, responder, peer) {
  const properties = (message && message.properties) || {};
  const has = data !== null && typeof data === 'object' && !Array.isArray(data)
    && Object.prototype.hasOwnProperty.call(data, 'correlationId');
  const orNull = (v) => (v === undefined ? null : v);
  return {
    echo: orNull(data),
    responder,
    peer,
    correlationId: has ? data.correlationId : null,
    seen: {
      message_id: orNull(properties.messageId),
      correlation_id: orNull(properties.correlationId),
      reply_to: orNull(properties.replyTo),
      reply_to_source: 'native',
      headers: Object.keys(properties.headers || {}).sort(),
      attempt: null,
    },
  };
}
