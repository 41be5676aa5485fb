"""A run's own vhost on its broker: created with its owner record, deleted at the end."""
from __future__ import annotations

import uuid
from contextlib import contextmanager
from typing import Callable, Iterator

from ..core.errors import BrokerError
from ..core.ownership import vhost_description
from ..core.signals import deferred as deferred_signals
from .endpoint import BrokerEndpoint
from .management import Management
from .leftovers import VHOST_PREFIX
from .lifecycle import check_broker


@contextmanager
def run_vhost(endpoint: BrokerEndpoint, log: Callable[[str], None], lost: Callable[[], str | None] | None = None,
              checked: bool = False) -> Iterator[tuple[BrokerEndpoint, Management, str]]:
    """A fresh vhost for one run on its broker (the caller's `Broker` owns the broker).

    The broker is checked first (pre-flight) unless the caller's `Broker` did (`checked`).
    The vhost carries its owner record (so a killed run's vhost can be swept later) and is
    deleted afterwards, with every queue and exchange a run left, whatever happened in
    between. When `lost` says the broker is gone, deleting is not attempted; a deletion that
    fails is said, not raised: the run's results stand.
    """
    if not checked:
        check_broker(endpoint, log)
    management = endpoint.management()
    vhost = f"{VHOST_PREFIX}{uuid.uuid4().hex[:8]}"
    with deferred_signals():
        try:
            management.create_vhost(vhost, vhost_description())
        except BrokerError:
            _delete_vhost(management, vhost, log)
            raise

    def drop(reraise: bool) -> None:
        with deferred_signals(reraise):
            cause = lost() if lost is not None else None
            if cause:
                log(f"the run's vhost {vhost} is not deleted: the broker was lost ({cause})")
            else:
                _delete_vhost(management, vhost, log)

    try:
        yield endpoint, management, vhost
    finally:
        # A signal now is recorded (signals.pending), not raised: it must not replace
        # what is on its way, nor lose a finished run's results; the caller asks.
        drop(reraise=False)


def _delete_vhost(management: Management, vhost: str, log: Callable[[str], None]) -> None:
    try:
        management.delete_vhost(vhost)
    except BrokerError as exc:
        log(f"could not delete the run's vhost {vhost} ({exc}); its owner record lets the next run, "
            "or acemq-interop doctor --clean, remove it")
