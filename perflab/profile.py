"""Where an app's samples go: async-profiler's collapsed stacks, summed by frame and by layer.

The input is async-profiler's collapsed output (roles/app/files/perflab_profile.py writes it on the
app host): one line per distinct stack, its frames from the thread's root to the sampled frame,
separated by ';', then a space and the samples that stack took:

    start_thread;thread_native_entry;...;io/netty/channel/nio/NioEventLoop.run;...;__send_[k] 42

Frame names: Java methods as package/Class.method (async-profiler may append _[j] JIT-compiled,
_[i] inlined, _[0] interpreted, _[1] C1); kernel functions end in _[k]; the JVM's and the C
library's own are C/C++ names (G1YoungCollector::collect, __libc_write).

A stack belongs to one layer, by LAYER_RULES, the one table of rules:
- a frame matches the rule with the longest prefix of its name (package names with '.', native
  names as written), so io/vertx/core/json/JsonObject.encode is JSON although io.vertx.core is the
  HTTP server;
- the stack's layer is that of its innermost (leaf-most) frame that matches a rule. The JDK's own
  classes (java.lang, java.util, sun.nio...), the C library and the kernel match none: the CPU they
  spend is charged to the layer that called them (a socket write from Netty is the HTTP server's,
  a String built by Jackson is JSON's). An app's own method is charged only what it spends itself
  and in the JDK; what it calls in a library is that library's;
- a stack with no matching frame is `jvm` when it has no Java frame at all (the VM thread,
  safepoints, the JVM's other native threads) and `other` otherwise (Java code of no known layer:
  the JDK alone, or a library the table does not name).
The GC and the JIT compilers match by the JVM's C++ frames on their threads (G1..., CompileBroker::...).

perflab profile summarize writes a ProfileSummary (profile-summary.json, perflab.rundir).
"""

from __future__ import annotations

import gzip
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# async-profiler (Apache-2.0), the app's profiler: the version the lab fetches from Maven Central
# (tools.profiler:async-profiler, its jar carrying the agent library of each platform). Stated here
# once: the Makefile reads it (make async-profiler extracts the jar into async_profiler_lib's place),
# and so do the tests and benchmarks that load the library.
ASYNC_PROFILER_VERSION = "4.2"


def async_profiler_lib(checkout: Path, platform: str = "linux-x64") -> Path:
    """Where make async-profiler puts the agent library of PLATFORM under CHECKOUT."""
    return checkout / "build" / f"async-profiler-{ASYNC_PROFILER_VERSION}" / platform / "libasyncProfiler.so"


# Layer id -> what the summary calls it. The order is the summary's.
LAYERS: dict[str, str] = {
    "http_server": "HTTP server",
    "routing": "routing and dispatch",
    "json": "JSON",
    "db": "DB driver and pool",
    "tls": "TLS",
    "metrics": "metrics and observability",
    "logging": "logging",
    "gc": "GC",
    "jit": "JIT compiler",
    "app": "the app's own code",
    "jvm": "JVM (no Java frame: its threads, runtime stubs)",
    "other": "other (JDK or an unnamed library)",
}

# The one table: layer -> the frame-name prefixes that are it. Java names with '.', as normalised by
# frame_name(); a prefix ends where a name part ends ('io.netty' matches io.netty.channel..., not
# io.nettyx). Native (C++) prefixes match any name that starts with them.
LAYER_RULES: dict[str, tuple[str, ...]] = {
    "http_server": (
        "io.netty", "reactor.netty", "io.vertx.core", "io.quarkus.vertx.core", "io.quarkus.vertx.http",
        "io.quarkus.netty", "org.apache.tomcat", "org.apache.coyote", "org.apache.catalina", "org.eclipse.jetty",
        "io.undertow", "org.xnio", "jakarta.servlet", "javax.servlet", "org.springframework.boot.web.embedded",
        # The server's worker pool (Undertow's, Quarkus' blocking workers), as Tomcat's is Tomcat's.
        "org.jboss.threads",
    ),
    "routing": (
        "org.springframework.web", "org.springframework.http", "org.springframework.core",
        "org.springframework.util", "org.springframework.beans", "org.springframework.aop",
        "org.springframework.context", "org.springframework.validation", "org.springframework.boot.web.servlet",
        "reactor.core", "reactor.util", "org.reactivestreams", "io.vertx.ext.web", "org.jboss.resteasy.reactive",
        "io.quarkus.resteasy.reactive", "io.quarkus.arc", "io.quarkus.vertx.web", "io.smallrye.mutiny",
        "io.smallrye.context", "jakarta.ws.rs", "org.glassfish.jersey",
    ),
    "json": (
        "com.fasterxml.jackson", "io.vertx.core.json", "io.vertx.core.parsetools", "jakarta.json",
        "org.eclipse.yasson", "com.google.gson", "com.dslplatform.json", "com.jsoniter",
        "io.quarkus.jackson", "io.quarkus.resteasy.reactive.jackson", "org.jboss.resteasy.reactive.server.jackson",
        "io.quarkus.resteasy.reactive.jsonb", "org.springframework.http.converter.json",
        "org.springframework.http.codec.json",
    ),
    "db": (
        "org.mariadb", "com.mysql", "org.postgresql", "com.zaxxer.hikari", "io.vertx.sqlclient",
        "io.vertx.mysqlclient", "io.vertx.pgclient", "io.agroal", "org.hibernate", "io.r2dbc", "dev.miku.r2dbc",
        "io.asyncer.r2dbc", "org.jooq", "jakarta.persistence", "io.quarkus.hibernate", "io.quarkus.agroal",
        "io.quarkus.reactive", "org.springframework.jdbc", "org.springframework.r2dbc", "org.springframework.orm",
        "org.springframework.data", "org.springframework.transaction", "org.springframework.dao",
    ),
    "tls": (
        "sun.security.ssl", "javax.net.ssl", "io.netty.handler.ssl", "io.netty.internal.tcnative",
        "org.bouncycastle", "com.sun.crypto.provider", "sun.security.provider", "sun.security.rsa",
        "sun.security.ec", "sun.security.util", "org.wildfly.openssl",
    ),
    "metrics": (
        "io.micrometer", "io.prometheus", "io.opentelemetry", "io.smallrye.metrics", "io.quarkus.micrometer",
        "io.quarkus.opentelemetry", "io.vertx.micrometer", "io.vertx.core.spi.metrics", "org.springframework.boot.actuate",
        "org.springframework.web.filter.ServerHttpObservationFilter",
        "org.springframework.web.filter.reactive.ServerHttpObservationFilter",
        "org.springframework.http.server.observation", "org.springframework.http.server.reactive.observation",
    ),
    "logging": (
        "org.jboss.logging", "org.jboss.logmanager", "org.slf4j", "ch.qos.logback", "org.apache.logging",
        "org.apache.commons.logging", "java.util.logging", "io.quarkus.bootstrap.logging",
    ),
    # HotSpot's collectors and their threads, by their C++ classes.
    "gc": (
        "G1", "PS", "ParallelScavengeHeap", "ParallelCompact", "SerialHeap", "DefNewGeneration",
        "TenuredGeneration", "GenCollectedHeap", "MarkSweep", "Shenandoah", "ZCollectedHeap", "ZDriver", "ZWorker",
        "XCollectedHeap", "GCTaskThread", "ConcurrentGCThread", "VM_GC_Operation", "VM_CollectForAllocation",
        "VM_G1", "VM_ParallelGC", "VM_GenCollect", "CollectedHeap::", "ReferenceProcessor", "WeakProcessor",
        "CardTable", "StringDedup", "OopStorage", "WorkerThread::run", "GangWorker::run", "BarrierSet",
    ),
    # HotSpot's C1 and C2 compilers and their threads.
    "jit": (
        "CompileBroker", "C2Compiler", "Compilation::", "Compiler::compile", "Compile::", "PhaseIdealLoop",
        "PhaseChaitin", "PhaseIterGVN", "PhaseCCP", "PhaseCFG", "PhaseOutput", "PhaseLive", "PhaseIFG",
        "PhaseAggressiveCoalesce", "PhaseMacroExpand", "PhaseRemoveUseless", "PhaseRenumberLive", "PhaseStringOpts",
        "PhaseVector", "Matcher::", "GraphBuilder", "LinearScan", "IR::", "ciEnv", "ciMethod", "ciObjectFactory",
        "ciBytecodeStream", "CompilerThread", "CompileQueue", "InlineTree", "Parse::", "GraphKit", "LIR_",
        "ConnectionGraph", "BCEscapeAnalyzer", "CodeInstaller", "nmethod::new_nmethod",
        # The collectors' barrier code generators run in the compilers (the GC's own prefixes are shorter).
        "BarrierSetC1", "BarrierSetC2", "CardTableBarrierSetC1", "CardTableBarrierSetC2", "G1BarrierSetC1",
        "G1BarrierSetC2",
    ),
    # The apps' own packages: the project's (dev.perflab...) and TechEmpower's (frameworks/Java/quarkus:
    # io.quarkus.benchmark, spring: hello, spring-webflux: benchmark).
    "app": ("dev.perflab", "io.quarkus.benchmark", "hello", "benchmark"),
}

_ANNOTATION = re.compile(r"_\[[a-z0-9]\]$")
# A Java frame's name after normalisation: package.Class.method, or Class.method in no package.
_JAVA_FRAME = re.compile(r"^[\w$]+(\.[\w$<>]+)+$")
_CXX_FRAME = re.compile(r"::|^[A-Z_a-z][\w]*\(")


class ProfileError(ValueError):
    """Collapsed stacks that cannot be read: says which line and what is wrong."""


def frame_name(frame: str) -> str:
    """A frame as the rules read it: async-profiler's _[j]/_[i]/_[k] annotation off, '/' as '.'."""
    name = _ANNOTATION.sub("", frame)
    if "::" in name or "(" in name:
        return name
    return name.replace("/", ".")


def is_kernel(frame: str) -> bool:
    return frame.endswith("_[k]")


def is_java(frame: str) -> bool:
    """A Java method's frame: a dotted (or slashed) name, neither kernel nor C++."""
    if is_kernel(frame):
        return False
    name = frame_name(frame)
    return bool(_JAVA_FRAME.match(name)) and not _CXX_FRAME.search(name) and not name.endswith(".so")


def _build_index(rules: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
    """(prefix, layer), longest prefix first: a frame takes the first that matches."""
    unknown = set(rules) - set(LAYERS)
    if unknown:
        raise ValueError(f"layer rules name unknown layers: {sorted(unknown)}")
    seen: dict[str, str] = {}
    for layer, prefixes in rules.items():
        for prefix in prefixes:
            if prefix in seen:
                raise ValueError(f"prefix {prefix!r} is in both {seen[prefix]} and {layer}")
            seen[prefix] = layer
    return sorted(seen.items(), key=lambda item: -len(item[0]))


_INDEX = _build_index(LAYER_RULES)


def _matches(name: str, prefix: str) -> bool:
    if not name.startswith(prefix):
        return False
    if not prefix[-1].isalnum() or len(name) == len(prefix):
        return True
    # Java packages and classes match whole parts; C++ class prefixes (G1, PS) match any name.
    if "." in prefix or prefix.islower():
        return name[len(prefix)] == "."
    return True


def frame_layer(frame: str) -> str | None:
    """The layer whose rule matches FRAME with the longest prefix, None when no rule matches."""
    if is_kernel(frame):
        return None
    name = frame_name(frame)
    java = is_java(frame)
    for prefix, layer in _INDEX:
        # A Java frame matches package rules only, a native frame native rules only: the C++
        # class PSYoungGen is GC, the Java package PS... would not be.
        if ("." in prefix or prefix.islower()) != java:
            continue
        if _matches(name, prefix):
            return layer
    return None


def stack_layer(frames: Sequence[str]) -> str:
    """The layer of a stack (root first): its innermost frame that matches a rule; see the module."""
    for frame in reversed(frames):
        layer = frame_layer(frame)
        if layer is not None:
            return layer
    return "other" if any(is_java(frame) for frame in frames) else "jvm"


@dataclass(frozen=True)
class Stack:
    frames: tuple[str, ...]
    samples: int


def parse_collapsed(text: str, source: str = "collapsed stacks") -> list[Stack]:
    """Collapsed stacks, one 'frame;frame;... count' a line; ProfileError names a bad line."""
    stacks = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        body, _, count = line.rstrip().rpartition(" ")
        if not body or not count.isdigit():
            raise ProfileError(f"{source}, line {number}: not 'frame;frame;... count' (no sample count at its end)")
        frames = tuple(body.split(";"))
        if any(not frame for frame in frames):
            raise ProfileError(f"{source}, line {number}: an empty frame between ';'")
        stacks.append(Stack(frames, int(count)))
    if not stacks:
        raise ProfileError(f"{source}: no stacks (an empty profile: was the app sampled during the window?)")
    return stacks


def read_collapsed(path: Path) -> list[Stack]:
    """Collapsed stacks from PATH, plain or gzip (.gz)."""
    try:
        data = path.read_bytes()
        text = (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode("utf-8")
    except FileNotFoundError:
        raise ProfileError(f"{path}: no such file") from None
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError):
        raise ProfileError(f"{path}: not text: give async-profiler's collapsed output (file=....collapsed)") from None
    except OSError as exc:
        raise ProfileError(f"{path}: cannot be read: {exc.strerror}") from None
    return parse_collapsed(text, str(path))


# ---------------------------------------------------------------------------------------------
# The summary: profile-summary.json (perflab.rundir reads and writes it)

TOP_FRAMES = 20  # frames by self time the summary keeps: the head of a flat profile


@dataclass(frozen=True)
class LayerShare:
    layer: str  # a LAYERS key
    title: str
    samples: int
    share: float  # of all samples, 0..1; the layers' shares add up to 1


@dataclass(frozen=True)
class TopFrame:
    frame: str  # as async-profiler named it
    layer: str  # the layer of the stacks it tops (its own rule's, else the stack's)
    self_samples: int  # samples in which it was the innermost frame
    share: float


@dataclass(frozen=True, kw_only=True)
class ProfileSummary:
    """profile-summary.json: a profiled window's samples by layer (every layer, in LAYERS' order) and
    its top frames by self time (perflab profile summarize)."""

    schema_version: int = 1
    source: str  # the collapsed file summarised (its name)
    samples: int
    stacks: int  # distinct stacks
    layers: tuple[LayerShare, ...]
    top_frames: tuple[TopFrame, ...]

    def share_of(self, layer: str) -> float:
        for entry in self.layers:
            if entry.layer == layer:
                return entry.share
        raise KeyError(layer)


def layer_samples(stacks: Iterable[Stack]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for stack in stacks:
        counts[stack_layer(stack.frames)] += stack.samples
    return counts


def summarize(stacks: Sequence[Stack], source: str, top: int = TOP_FRAMES) -> ProfileSummary:
    total = sum(stack.samples for stack in stacks)
    if total <= 0:
        raise ProfileError(f"{source}: no samples")
    by_layer = layer_samples(stacks)
    self_samples: Counter[str] = Counter()
    frame_layers: dict[str, Counter[str]] = {}
    for stack in stacks:
        leaf = stack.frames[-1]
        self_samples[leaf] += stack.samples
        frame_layers.setdefault(leaf, Counter())[stack_layer(stack.frames)] += stack.samples
    top_frames = tuple(
        TopFrame(frame, frame_layer(frame) or frame_layers[frame].most_common(1)[0][0], count, count / total)
        for frame, count in sorted(self_samples.items(), key=lambda item: (-item[1], item[0]))[:top]
    )
    layers = tuple(LayerShare(layer, title, by_layer[layer], by_layer[layer] / total) for layer, title in LAYERS.items())
    return ProfileSummary(source=source, samples=total, stacks=len(stacks), layers=layers, top_frames=top_frames)


def percentages(counts: Sequence[int], decimals: int = 1) -> list[float]:
    """COUNTS as percentages rounded to DECIMALS that add up to exactly 100 (largest remainder)."""
    total = sum(counts)
    if total <= 0:
        return [0.0 for _ in counts]
    unit = 10**decimals
    exact = [count * 100 * unit / total for count in counts]
    floors = [int(value) for value in exact]
    missing = 100 * unit - sum(floors)
    for index in sorted(range(len(counts)), key=lambda i: floors[i] - exact[i])[:missing]:
        floors[index] += 1
    return [value / unit for value in floors]


def render(summary: ProfileSummary) -> str:
    """The summary as perflab profile summarize prints it: layers, then the top frames."""
    lines = [f"{summary.source}: {summary.samples} samples in {summary.stacks} stacks", "", "share  samples  layer"]
    shown = percentages([entry.samples for entry in summary.layers])
    for entry, percent in sorted(zip(summary.layers, shown), key=lambda pair: -pair[0].samples):
        if entry.samples:
            lines.append(f"{percent:5.1f}% {entry.samples:8}  {entry.title}")
    lines += ["", f"top {len(summary.top_frames)} frames by self time", "self   samples  layer       frame"]
    for frame in summary.top_frames:
        lines.append(f"{frame.share * 100:5.1f}% {frame.self_samples:8}  {frame.layer:11} {frame.frame}")
    return "\n".join(lines) + "\n"
