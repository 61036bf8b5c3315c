"""The command palette's cockpit commands: every screen binding, plus palette-only actions
(stopping the engine), offered only when the screen would run them (`check_action`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.screen import Screen


@dataclass(frozen=True)
class PaletteEntry:
    name: str
    action: str
    help: str


def _entries(screen: Screen) -> Iterator[PaletteEntry]:
    seen = set()
    for b in getattr(screen, "BINDINGS", []):
        if isinstance(b, Binding) and b.description and b.action not in seen:
            seen.add(b.action)
            yield PaletteEntry(b.description, b.action, b.tooltip or f"key: {b.key}")
    yield from getattr(screen, "PALETTE_ONLY", ())


class CockpitCommands(Provider):
    def _available(self) -> list[PaletteEntry]:
        screen = self.screen
        out = []
        for e in _entries(screen):
            name = e.action.removeprefix("screen.")
            if "." in name or screen.check_action(name, ()):
                out.append(e)
        return out

    def _run(self, action: str) -> None:
        self.app.call_later(self.screen.run_action, action)

    async def discover(self) -> Hits:
        for e in self._available():
            yield DiscoveryHit(e.name, partial(self._run, e.action), help=e.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for e in self._available():
            score = matcher.match(e.name)
            if score > 0:
                yield Hit(
                    score, matcher.highlight(e.name), partial(self._run, e.action), help=e.help
                )
