// The responder as a Nest user writes it: a controller with one @MessagePattern handler, in a
// module (decorators applied by hand, as TypeScript would apply them).
import { Controller, Module } from '@nestjs/common';
import { Ctx, MessagePattern, Payload, RpcException } from '@nestjs/microservices';
import { ScenarioFailure, echoBody } from './outcomes.js';

// The pattern of every call and of the responder's handler. An acemq request carries no Nest
// envelope, so no pattern: nothing a Nest user could write matches it (README.md).
export const PATTERN = 'acemq-interop.request';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// One Nest application per responder: a controller with one @MessagePattern handler, in a
// module, started with NestFactory.createMicroservice(..., {transport: Transport.RMQ}).
export function makeModule(name, peer, behavior) {
  const kind = behavior && behavior.reply ? behavior.reply : 'echo';
  const delay = behavior && behavior.delay_ms ? behavior.delay_ms : 0;
  if (kind !== 'echo' && kind !== 'fail') throw new Error(`unknown behavior ${kind}`);
  if (kind === 'fail' && typeof behavior.error_message !== 'string') throw new Error('behavior fail needs error_message');
  class RequestsController {
    async handle(data, context) {
      if (delay) await sleep(delay);
      if (kind === 'fail') {
        // What a Nest user throws to send an error back: its text reaches the caller's `err`.
        const failure = new ScenarioFailure(behavior.error_message);
        throw new RpcException(`${failure.name}: ${failure.message}`);
      }
      return echoBody(data, context.getMessage(), name, peer);
    }
  }
  const method = Object.getOwnPropertyDescriptor(RequestsController.prototype, 'handle');
  Payload()(RequestsController.prototype, 'handle', 0);
  Ctx()(RequestsController.prototype, 'handle', 1);
  MessagePattern(PATTERN)(RequestsController.prototype, 'handle', method);
  Controller()(RequestsController);
  class RequestsModule {}
  Module({ controllers: [RequestsController] })(RequestsModule);
  return RequestsModule;
}

