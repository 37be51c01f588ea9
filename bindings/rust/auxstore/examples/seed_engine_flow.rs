//! The seed engine's own aux-state flow on auxstore, across a restart.
//!
//! The seed engine (seeds 000 and 001) serialises each sequence's indexer
//! state per layer — QSA `snapshot_aux` / `restore_aux` (raw keys; block
//! keys re-pooled on restore), DSA `snapshot_blob` / `restore_blob` (the
//! reachable k_normed, gate and valid rows) — and keeps the blobs in its
//! in-memory prefix cache. Here those four functions are replaced by
//! auxstore calls: the engine's device buffers are wrapped in borrowed
//! states, snapshotted write-behind on the engine's stream, and after a
//! restart restored (QSA re-pooled on the device) into a fresh sequence's
//! buffers, the counters moving last, as the seeds require.
//!
//!   seed_engine_flow [DIR]     runs `write DIR`, then `read DIR`, each in a
//!                              process of its own (a fresh temp dir without DIR)
//!   seed_engine_flow write DIR process 1: ingest two sequences, snapshot,
//!                              flush, exit without closing the store
//!   seed_engine_flow read DIR  process 2: longest prefix of each request,
//!                              restore, check every byte and the counters
//!
//! Host backend; every byte checked, QSA block keys against
//! `qsa_block_pool_host` (the CPU reference of the re-pool kernel).
use auxstore::*;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

// ---- the model (a GLM-5.3-like stack: QSA and DSA layers interleaved) --------

const LAYERS: [(u32, Kind); 4] = [(0, Kind::Qsa), (1, Kind::Dsa), (2, Kind::Qsa), (3, Kind::Dsa)];
const HD: u32 = 64;
const MAX_TOKENS: u32 = 2048;
const RATIO: u32 = 8;
const ROT: u32 = 32;
const INDEX_HEAD_DIM: u32 = 128; // 513 bytes per token and DSA layer
const DSA_CAPACITY: u32 = 2048;
const BLOCK: u32 = 64; // prefix-cache block size
const SALT: u64 = 0x5eed_0001;
const TOKENS: usize = 1024;
const SEQUENCES: [u32; 2] = [7, 8];

fn geometry() -> Geometry {
    Geometry {
        qsa_hd: HD,
        qsa_max_tokens: MAX_TOKENS,
        qsa_ratio: RATIO,
        qsa_rot: ROT,
        qsa_theta: 10000.0,
        qsa_eps: 1e-6,
        dsa_index_head_dim: INDEX_HEAD_DIM,
        dsa_capacity: DSA_CAPACITY,
    }
}

fn identity() -> NamespaceSpec {
    let mut s = NamespaceSpec::new("metrale/glm5next-qsa-dsa-demo", geometry());
    s.weight_revision = Some("2026-09-25".into());
    s
}

type Failure = String;
type Res<T> = std::result::Result<T, Failure>;

fn ctx<T>(r: Result<T>, what: &str) -> Res<T> {
    r.map_err(|e| format!("{what}: {e}"))
}

fn ensure(cond: bool, what: impl Into<String>) -> Res<()> {
    if cond {
        Ok(())
    } else {
        Err(what.into())
    }
}

// ---- deterministic "computed" state ---------------------------------------------

struct Rng(u64);
impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn bf16s(&mut self, n: usize) -> Vec<u16> {
        (0..n).map(|_| ((((self.next() % 4_000_000) as f32 / 1_000_000.0) - 2.0).to_bits() >> 16) as u16).collect()
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn tokens_of(seq: u32, n: usize) -> Vec<u32> {
    (0..n as u32).map(|i| seq * 1_000_000 + i * 7 % 50_000).collect()
}

// ---- the engine's side (seed 000: QsaIndexer / QsaSeqState) ----------------------

/// One QSA layer: geometry and its weights, on the device.
struct QsaIndexer<'b> {
    layer: u32,
    k_pool_k: DeviceBuffer<'b>,
    k_norm_w: DeviceBuffer<'b>,
    host_k_pool_k: Vec<u16>,
    host_k_norm_w: Vec<u16>,
}

/// One sequence's QSA indexer state for one layer: the engine's buffers and
/// counters.
struct QsaSeqState<'b> {
    raw_keys: DeviceBuffer<'b>,
    block_keys: DeviceBuffer<'b>,
    ingested: usize,
    pooled: usize,
}

impl<'b> QsaIndexer<'b> {
    fn new(b: &'b Backend, s: &Stream<'_>, layer: u32) -> Res<QsaIndexer<'b>> {
        let mut r = Rng::new(1000 + layer as u64);
        let (kp, kn) = (r.bf16s(HD as usize), r.bf16s(HD as usize));
        let mut k_pool_k = ctx(b.alloc(HD as usize * 2), "alloc")?;
        let mut k_norm_w = ctx(b.alloc(HD as usize * 2), "alloc")?;
        ctx(k_pool_k.write(0, &bf16_to_bytes(&kp), s), "upload k_pool_k")?;
        ctx(k_norm_w.write(0, &bf16_to_bytes(&kn), s), "upload k_norm_w")?;
        Ok(QsaIndexer { layer, k_pool_k, k_norm_w, host_k_pool_k: kp, host_k_norm_w: kn })
    }

    fn new_seq(&self, b: &'b Backend) -> Res<QsaSeqState<'b>> {
        Ok(QsaSeqState {
            raw_keys: ctx(b.alloc((MAX_TOKENS * HD * 2) as usize), "alloc raw_keys")?,
            block_keys: ctx(b.alloc((MAX_TOKENS / RATIO * HD * 2) as usize), "alloc block_keys")?,
            ingested: 0,
            pooled: 0,
        })
    }

    /// The engine's prefill: raw keys, then its own `qsa_block_pool` launch
    /// for every complete block (here the CPU reference plays the kernel).
    fn ingest(&self, st: &mut QsaSeqState<'_>, raw: &[u16], s: &Stream<'_>) -> Res<()> {
        let ingested = raw.len() / HD as usize;
        let pooled = ingested / RATIO as usize;
        let keys = ctx(
            qsa_block_pool_host(
                &geometry(),
                raw,
                ingested as u64,
                &self.host_k_pool_k,
                &self.host_k_norm_w,
                pooled as u32,
            ),
            "qsa_block_pool",
        )?;
        ctx(st.raw_keys.write(0, &bf16_to_bytes(raw), s), "upload raw keys")?;
        ctx(st.block_keys.write(0, &bf16_to_bytes(&keys), s), "upload block keys")?;
        st.ingested = ingested;
        st.pooled = pooled;
        Ok(())
    }

    /// Replaces seed 000's `snapshot_aux` and `restore_aux`: the sequence's
    /// buffers as an auxstore state carrying its counters. A snapshot of it
    /// is the QSA v1 blob `snapshot_aux` made (`[ingested][pooled][raw
    /// keys]`); a restore into it (counters 0: a fresh sequence) uploads the
    /// raw keys and re-pools `pooled` blocks with one launch, exactly
    /// `restore_aux`'s work, checked as `restore_aux` checks.
    fn aux_state<'a>(&'a self, b: &'a Backend, st: &'a mut QsaSeqState<'_>) -> Result<State<'a>> {
        let (ingested, pooled) = (st.ingested as u64, st.pooled as u64);
        b.borrow_qsa_state(
            &geometry(),
            QsaBuffers {
                raw_keys: &mut st.raw_keys,
                block_keys: &mut st.block_keys,
                k_pool_k: &self.k_pool_k,
                k_norm_w: &self.k_norm_w,
            },
            ingested,
            pooled,
        )
    }
}

// ---- the engine's side (seed 001: Glm5NextDsaState) ---------------------------------

struct Glm5NextDsaState<'b> {
    layer: u32,
    k_normed: DeviceBuffer<'b>,
    gate: DeviceBuffer<'b>,
    valid: DeviceBuffer<'b>,
    capacity: usize,
    len: usize,
}

/// Seed 001's `blob_bytes(len, d)`.
fn blob_bytes(len: usize, d: usize) -> usize {
    16 + len * (d * 4 + 1)
}

impl<'b> Glm5NextDsaState<'b> {
    fn new(b: &'b Backend, layer: u32, capacity: usize) -> Res<Glm5NextDsaState<'b>> {
        let row = INDEX_HEAD_DIM as usize * 2;
        Ok(Glm5NextDsaState {
            layer,
            k_normed: ctx(b.alloc(capacity * row), "alloc k_normed")?,
            gate: ctx(b.alloc(capacity * row), "alloc gate")?,
            valid: ctx(b.alloc(capacity), "alloc valid")?,
            capacity,
            len: 0,
        })
    }

    fn ingest(&mut self, k: &[u8], g: &[u8], v: &[u8], s: &Stream<'_>) -> Res<()> {
        ctx(self.k_normed.write(0, k, s), "upload k_normed")?;
        ctx(self.gate.write(0, g, s), "upload gate")?;
        ctx(self.valid.write(0, v, s), "upload valid")?;
        self.len = v.len();
        Ok(())
    }

    /// Replaces seed 001's `snapshot_blob` / `restore_blob`: a snapshot is
    /// the DSA v1 blob (`[len][index_head_dim][k_normed][gate][valid]`, `len`
    /// rows); a restore checks header, head dim, exact size and
    /// `len <= capacity` before any copy and moves the cursor last.
    fn aux_state<'a>(&'a mut self, b: &'a Backend) -> Result<State<'a>> {
        let len = self.len as u64;
        b.borrow_dsa_state(
            &geometry(),
            DsaBuffers {
                capacity_rows: self.capacity as u64,
                k_normed: &mut self.k_normed,
                gate: &mut self.gate,
                valid: &mut self.valid,
            },
            len,
        )
    }
}

// ---- one sequence ------------------------------------------------------------------

struct Sequence<'b> {
    qsa: Vec<QsaSeqState<'b>>,      // layers 0 and 2
    dsa: Vec<Glm5NextDsaState<'b>>, // layers 1 and 3
}

/// What sequence `seq`'s prefill computed for each layer.
struct Computed {
    raw: Vec<Vec<u16>>,
    dsa: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)>,
}

fn computed(seq: u32) -> Computed {
    let mut r = Rng::new(seq as u64 * 131);
    let row = TOKENS * INDEX_HEAD_DIM as usize * 2;
    Computed {
        raw: (0..2).map(|_| r.bf16s(TOKENS * HD as usize)).collect(),
        dsa: (0..2).map(|_| (r.bytes(row), r.bytes(row), r.bytes(TOKENS))).collect(),
    }
}

fn new_sequence<'b>(b: &'b Backend, idx: &[QsaIndexer<'b>], dsa_capacity: usize) -> Res<Sequence<'b>> {
    Ok(Sequence {
        qsa: idx.iter().map(|i| i.new_seq(b)).collect::<Res<_>>()?,
        dsa: vec![Glm5NextDsaState::new(b, 1, dsa_capacity)?, Glm5NextDsaState::new(b, 3, dsa_capacity)?],
    })
}

struct Engine<'b> {
    backend: &'b Backend,
    stream: Stream<'b>,
    indexers: Vec<QsaIndexer<'b>>,
}

fn open_store(dir: &Path) -> Res<Store> {
    let mut o = Options::new();
    ctx(o.chunk_bytes(256 << 10), "options")?;
    ctx(o.log_callback(LogLevel::Warn, |lvl, src, msg| eprintln!("[{lvl:?}] {src}: {msg}")), "log callback")?;
    ctx(Store::open(dir.join("store"), &o), "open")
}

fn pipeline_options() -> PipelineOptions {
    PipelineOptions { staging_bytes: 256 << 10, ..PipelineOptions::default() }
}

// ---- process 1 --------------------------------------------------------------------------

fn run_write(dir: &Path) -> Res<()> {
    let store = open_store(dir)?;
    let ns = ctx(store.register_namespace_ex(&identity()), "namespace")?;
    let backend = ctx(Backend::host(), "backend")?;
    let stream = ctx(backend.create_stream(), "stream")?;
    let indexers = vec![QsaIndexer::new(&backend, &stream, 0)?, QsaIndexer::new(&backend, &stream, 2)?];
    let e = Engine { backend: &backend, stream, indexers };
    let pipeline = ctx(Pipeline::with_options(&store, &backend, &pipeline_options()), "pipeline")?;

    for seq in SEQUENCES {
        let c = computed(seq);
        let mut s = new_sequence(e.backend, &e.indexers, DSA_CAPACITY as usize)?;
        for (i, idx) in e.indexers.iter().enumerate() {
            idx.ingest(&mut s.qsa[i], &c.raw[i], &e.stream)?;
        }
        for (i, d) in s.dsa.iter_mut().enumerate() {
            d.ingest(&c.dsa[i].0, &c.dsa[i].1, &c.dsa[i].2, &e.stream)?;
        }
        // snapshot_aux / snapshot_blob for every layer -> one auxstore
        // snapshot of the prefix, written behind.
        let (q0, q2) = s.qsa.split_at_mut(1);
        let (d1, d3) = s.dsa.split_at_mut(1);
        let sq0 = ctx(e.indexers[0].aux_state(e.backend, &mut q0[0]), "qsa state")?;
        let sq2 = ctx(e.indexers[1].aux_state(e.backend, &mut q2[0]), "qsa state")?;
        let sd1 = ctx(d1[0].aux_state(e.backend), "dsa state")?;
        let sd3 = ctx(d3[0].aux_state(e.backend), "dsa state")?;
        let prefix = *ctx(prefix_hashes(&tokens_of(seq, TOKENS), BLOCK, SALT), "prefix")?.last().unwrap();
        let out = ctx(
            pipeline.snapshot(ns, &prefix, TOKENS as u64, &[(0, &sq0), (1, &sd1), (2, &sq2), (3, &sd3)], &e.stream),
            "snapshot",
        )?;
        ensure(out.is_accepted(), format!("snapshot of sequence {seq} shed: {out:?}"))?;
    }
    ctx(pipeline.flush(), "flush")?;
    let ps = ctx(pipeline.stats(), "stats")?;
    ensure(ps.snapshots_written == 2 && ps.snapshots_shed == 0, format!("pipeline counters {ps:?}"))?;
    let per_seq = 2 * (16 + TOKENS * HD as usize * 2) + 2 * blob_bytes(TOKENS, INDEX_HEAD_DIM as usize);
    ensure(
        ps.bytes_snapshotted == 2 * per_seq as u64,
        format!("bytes_snapshotted {} != {}", ps.bytes_snapshotted, 2 * per_seq),
    )?;
    let st = ctx(store.stats(), "stats")?;
    ensure(st.snapshots == 2 && st.puts == 2, format!("store counters {st:?}"))?;
    println!(
        "write: {} sequences x {} tokens snapshotted ({} KiB each, {} layers), flushed; exiting without close",
        SEQUENCES.len(),
        TOKENS,
        per_seq / 1024,
        LAYERS.len()
    );
    // Sync durability: flushed snapshots survive a process that never closes.
    std::process::exit(0);
}

// ---- process 2 --------------------------------------------------------------------------

fn run_read(dir: &Path) -> Res<()> {
    let store = open_store(dir)?;
    let ns = ctx(store.register_namespace_ex(&identity()), "namespace")?;
    let backend = ctx(Backend::host(), "backend")?;
    let stream = ctx(backend.create_stream(), "stream")?;
    let indexers = vec![QsaIndexer::new(&backend, &stream, 0)?, QsaIndexer::new(&backend, &stream, 2)?];
    let e = Engine { backend: &backend, stream, indexers };
    let pipeline = ctx(Pipeline::with_options(&store, &backend, &pipeline_options()), "pipeline")?;
    let started = std::time::Instant::now();
    let mut restored_bytes = 0u64;

    for seq in SEQUENCES {
        // A request sharing the sequence's first TOKENS tokens.
        let mut request = tokens_of(seq, TOKENS);
        request.extend((0..100).map(|i| 999_000 + i));
        let (hit, lease) = ctx(store.longest_prefix_for_tokens_leased(ns, &request, BLOCK, SALT, 30_000), "lookup")?
            .ok_or_else(|| format!("sequence {seq}: no stored prefix"))?;
        ensure(hit.tokens == TOKENS as u64, format!("hit covers {} tokens", hit.tokens))?;

        // The stored layers are the seeds' blobs, byte for byte.
        let c = computed(seq);
        let m = ctx(store.get_manifest(ns, &hit.prefix), "manifest")?;
        let kinds: Vec<(u32, Kind)> = m.layers.iter().map(|l| (l.layer, l.kind)).collect();
        ensure(kinds == LAYERS.to_vec(), format!("manifest layers {kinds:?}"))?;
        for (i, (layer, _)) in LAYERS.iter().enumerate() {
            let blob = ctx(store.get_layer(ns, &hit.prefix, *layer), "get_layer")?;
            let want = if i % 2 == 0 {
                seed_snapshot_aux(TOKENS, TOKENS / RATIO as usize, &c.raw[i / 2])
            } else {
                let (k, g, v) = &c.dsa[i / 2];
                seed_snapshot_blob(TOKENS, INDEX_HEAD_DIM as usize, k, g, v)
            };
            ensure(*blob == want[..], format!("layer {layer}: stored bytes differ from the seed's blob"))?;
            restored_bytes += blob.len() as u64;
        }

        // A fresh sequence whose DSA reservation is too short: refused before
        // any copy, its cursor unchanged (seed 001's `ensure_room_through`).
        {
            let mut short = new_sequence(e.backend, &e.indexers, TOKENS / 2)?;
            let mut d = ctx(short.dsa[0].aux_state(e.backend), "dsa state")?;
            let r = pipeline.restore_wait(ns, &hit.prefix, &mut [(1, &mut d)]);
            ensure(r.is_err(), "a blob longer than the reservation was accepted")?;
            ensure(ctx(d.counters(), "counters")?.count == 0, "a refused restore moved the cursor")?;
        }

        // restore_aux / restore_blob for every layer: one restore, layer by
        // layer on the engine's stream, counters committed last.
        let mut s = new_sequence(e.backend, &e.indexers, DSA_CAPACITY as usize)?;
        let counters = {
            let (q0, q2) = s.qsa.split_at_mut(1);
            let (d1, d3) = s.dsa.split_at_mut(1);
            let mut sq0 = ctx(e.indexers[0].aux_state(e.backend, &mut q0[0]), "qsa state")?;
            let mut sq2 = ctx(e.indexers[1].aux_state(e.backend, &mut q2[0]), "qsa state")?;
            let mut sd1 = ctx(d1[0].aux_state(e.backend), "dsa state")?;
            let mut sd3 = ctx(d3[0].aux_state(e.backend), "dsa state")?;
            let r = pipeline.scope(|sc| -> Result<()> {
                let h = sc.start(
                    ns,
                    &hit.prefix,
                    [(0, &mut sq0), (1, &mut sd1), (2, &mut sq2), (3, &mut sd3)],
                    RestoreOptions::new().stream(&e.stream).lease(lease),
                )?;
                for (layer, _) in LAYERS {
                    // The engine would launch layer `layer`'s attention here.
                    h.stream_wait_layer(layer, &e.stream)?;
                }
                h.join()
            });
            ctx(r, "restore")?;
            [ctx(sq0.counters(), "c")?, ctx(sd1.counters(), "c")?, ctx(sq2.counters(), "c")?, ctx(sd3.counters(), "c")?]
        };
        // The counters move last, as restore_aux / restore_blob do.
        s.qsa[0].ingested = counters[0].count as usize;
        s.qsa[0].pooled = counters[0].pooled as usize;
        s.qsa[1].ingested = counters[2].count as usize;
        s.qsa[1].pooled = counters[2].pooled as usize;
        s.dsa[0].len = counters[1].count as usize;
        s.dsa[1].len = counters[3].count as usize;
        ctx(e.stream.synchronize(), "sync")?;

        // Every byte in the engine's buffers, and the re-pooled block keys
        // against the CPU reference.
        for (i, idx) in e.indexers.iter().enumerate() {
            let st = &s.qsa[i];
            ensure(
                st.ingested == TOKENS && st.pooled == TOKENS / RATIO as usize,
                format!("layer {} counters", idx.layer),
            )?;
            let raw = ctx(st.raw_keys.read_vec(0, TOKENS * HD as usize * 2, &e.stream), "read raw")?;
            ensure(raw == bf16_to_bytes(&c.raw[i]), format!("layer {}: raw keys differ", idx.layer))?;
            let want = ctx(
                qsa_block_pool_host(
                    &geometry(),
                    &c.raw[i],
                    TOKENS as u64,
                    &idx.host_k_pool_k,
                    &idx.host_k_norm_w,
                    st.pooled as u32,
                ),
                "qsa_block_pool_host",
            )?;
            let got = bf16_from_bytes(&ctx(st.block_keys.read_vec(0, want.len() * 2, &e.stream), "read blocks")?);
            ensure(got == want, format!("layer {}: re-pooled block keys differ from qsa_block_pool_host", idx.layer))?;
        }
        for (i, d) in s.dsa.iter().enumerate() {
            ensure(d.len == TOKENS, format!("layer {} len {}", d.layer, d.len))?;
            let (k, g, v) = &c.dsa[i];
            ensure(
                &ctx(d.k_normed.read_vec(0, k.len(), &e.stream), "read")? == k,
                format!("layer {}: k_normed", d.layer),
            )?;
            ensure(&ctx(d.gate.read_vec(0, g.len(), &e.stream), "read")? == g, format!("layer {}: gate", d.layer))?;
            ensure(&ctx(d.valid.read_vec(0, v.len(), &e.stream), "read")? == v, format!("layer {}: valid", d.layer))?;
        }
    }
    let elapsed = started.elapsed();
    let ps = ctx(pipeline.stats(), "stats")?;
    ensure(ps.restores_ok == 2, format!("restores_ok {}", ps.restores_ok))?;
    ensure(
        ps.restores_failed == 2,
        format!("restores_failed {} (the two refused short restores)", ps.restores_failed),
    )?;
    ensure(ps.bytes_restored == restored_bytes, format!("bytes_restored {} != {restored_bytes}", ps.bytes_restored))?;
    let st = ctx(store.stats(), "stats")?;
    ensure(st.snapshots == 2 && st.quarantines == 0 && st.leases == 0, format!("store counters {st:?}"))?;
    println!(
        "read: {} sequences restored after the restart, {} KiB, every byte and the re-pooled block keys checked ({:.1} ms)",
        SEQUENCES.len(),
        restored_bytes / 1024,
        elapsed.as_secs_f64() * 1e3
    );
    Ok(())
}

/// Seed 000's `snapshot_aux` blob, built by hand: what auxstore must store.
fn seed_snapshot_aux(ingested: usize, pooled: usize, raw: &[u16]) -> Vec<u8> {
    let mut blob = Vec::with_capacity(16 + ingested * HD as usize * 2);
    blob.extend_from_slice(&(ingested as u64).to_le_bytes());
    blob.extend_from_slice(&(pooled as u64).to_le_bytes());
    blob.extend_from_slice(&bf16_to_bytes(&raw[..ingested * HD as usize]));
    blob
}

/// Seed 001's `snapshot_blob`, built by hand.
fn seed_snapshot_blob(len: usize, d: usize, k: &[u8], g: &[u8], v: &[u8]) -> Vec<u8> {
    let mut blob = vec![0u8; blob_bytes(len, d)];
    blob[..8].copy_from_slice(&(len as u64).to_le_bytes());
    blob[8..16].copy_from_slice(&(d as u64).to_le_bytes());
    let kb = len * d * 2;
    blob[16..16 + kb].copy_from_slice(&k[..kb]);
    blob[16 + kb..16 + 2 * kb].copy_from_slice(&g[..kb]);
    blob[16 + 2 * kb..].copy_from_slice(&v[..len]);
    blob
}

// ---- the parent -----------------------------------------------------------------------

fn child(mode: &str, dir: &Path) -> Res<()> {
    let status = Command::new(std::env::current_exe().map_err(|e| e.to_string())?)
        .arg(mode)
        .arg(dir)
        .status()
        .map_err(|e| format!("spawning {mode}: {e}"))?;
    ensure(status.success(), format!("{mode} process failed: {status}"))
}

fn run_both(dir: Option<PathBuf>) -> Res<()> {
    let (dir, temp) = match dir {
        Some(d) => (d, false),
        None => {
            let d = std::env::temp_dir().join(format!("auxstore-seed-flow-{}", std::process::id()));
            (d, true)
        }
    };
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let r = child("write", &dir).and_then(|_| child("read", &dir));
    if temp {
        let _ = std::fs::remove_dir_all(&dir);
    }
    r
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.as_slice() {
        [m, d] if m == "write" => run_write(Path::new(d)),
        [m, d] if m == "read" => run_read(Path::new(d)),
        [] => run_both(None),
        [d] => run_both(Some(PathBuf::from(d))),
        _ => Err("usage: seed_engine_flow [DIR] | write DIR | read DIR".into()),
    };
    match r {
        Ok(()) => {
            if args.len() <= 1 {
                println!("seed_engine_flow: passed");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("seed_engine_flow: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}
