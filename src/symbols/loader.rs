//! Symbol tables loaded away from the reading side: the printer's loader
//! (see `engine::printer::Load`). Between loads it decodes the DWARF units
//! of the addr2line sessions it started, ahead of need (see
//! [`super::a2l::ahead`]).

use std::collections::VecDeque;

use crate::engine::printer::{Load, Wait};
use crate::machine::{Dso, DsoKind};

use super::a2l::ahead::{Decoder, Step};
use super::{ShippedDso, SymbolConfig, Symbolizer};

/// What loading a DSO's symbols needs: its name and build-id (see
/// [`Symbolizer::load_file`]). Equal requests get equal answers, whenever
/// they are made.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LoadRequest {
    /// The DSO's name as recorded (bytes: a path need not be UTF-8).
    pub long_name: Box<[u8]>,
    pub kind: DsoKind,
    pub build_id: Option<Vec<u8>>,
}

impl LoadRequest {
    /// The request for a DSO as the machine knows it now.
    pub fn of(dso: &Dso) -> LoadRequest {
        LoadRequest { long_name: dso.name.as_ref().into(), kind: dso.kind, build_id: dso.build_id.clone() }
    }
}

/// The loader: a symbolizer of its own, and the decoders of the sessions
/// it started, oldest first.
pub struct Loader {
    symbolizer: Symbolizer,
    decoders: VecDeque<Decoder>,
    /// Decoders in a row that were far enough ahead.
    idle: usize,
}

impl Loader {
    pub fn new(config: SymbolConfig, build_ids: Vec<(Vec<u8>, Vec<u8>)>) -> Loader {
        let mut symbolizer = Symbolizer::new(config);
        symbolizer.set_build_id_pairs(build_ids);
        Loader { symbolizer, decoders: VecDeque::new(), idle: 0 }
    }
}

impl Load for Loader {
    type Request = LoadRequest;
    type Loaded = ShippedDso;

    fn load(&mut self, r: &LoadRequest, ahead: bool) -> ShippedDso {
        let mut shipped = self.symbolizer.load_file_prepared(&r.long_name, r.kind, r.build_id.as_deref());
        // Without idle time, the session decodes its units itself.
        let decoder = shipped.take_decoder();
        if ahead {
            self.decoders.extend(decoder);
        }
        shipped
    }

    fn wait(&mut self) -> Wait {
        if self.decoders.is_empty() {
            Wait::Block
        } else if self.idle >= self.decoders.len() {
            self.idle = 0;
            Wait::Briefly
        } else {
            Wait::No
        }
    }

    fn step(&mut self) {
        let Some(d) = self.decoders.front_mut() else { return };
        match d.step() {
            Step::Worked => self.idle = 0,
            Step::Done => {
                self.decoders.pop_front();
            }
            Step::Ahead => {
                self.idle += 1;
                self.decoders.rotate_left(1);
            }
        }
    }
}
