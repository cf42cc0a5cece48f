//! `.debug_abbrev` tables, prepared for walking DIEs quickly.
//!
//! A DIE is an abbreviation code followed by its attribute values, in the
//! forms the code's abbreviation lists; the table of a unit sits at the
//! offset its header names:
//!
//! ```text
//!   .debug_abbrev, one table:
//!   code (uleb) | tag (uleb) | children (u8) | name, form (uleb pairs;
//!   an implicit_const form adds an sleb) ... 0, 0 | next code ... | 0
//! ```
//!
//! Scanning a unit for functions reads a handful of attributes of a few
//! DIEs and steps over everything else (types, members, parameters,
//! locations): most DIEs have only forms of a fixed size in the unit's
//! encoding, so [`Table`] works out each abbreviation's size once and a
//! DIE is stepped over with one addition. Values that are read go through
//! gimli's attribute parser. Malformed tables fail as gimli fails them
//! (a zero tag, a bad children byte, a zero name or form, a repeated
//! code).

use gimli::{AttributeSpecification, AttributeValue, DwForm, EndianSlice, Encoding, Reader as _, RunTimeEndian, UnitOffset};

use crate::fasthash::FastMap;

pub type R<'a> = EndianSlice<'a, RunTimeEndian>;

/// One attribute of an abbreviation, with its size when the form has a
/// fixed one.
#[derive(Debug, Clone, Copy)]
pub struct Attr {
    pub spec: AttributeSpecification,
    size: Option<u8>,
}

impl Attr {
    pub fn name(&self) -> u16 {
        self.spec.name().0
    }
}

#[derive(Debug, Clone)]
pub struct Abbrev {
    pub tag: u16,
    pub has_children: bool,
    /// Where its attributes are in the table's list.
    attrs: (u32, u32),
    /// The size of all its attribute values, if every form has a fixed one.
    fixed: Option<usize>,
    /// Bit `n` set: it has attribute `n` (names below 64).
    low_names: u64,
}

impl Abbrev {
    /// Whether it has attribute `name` (below 64).
    #[inline]
    pub fn has(&self, name: u16) -> bool {
        name < 64 && self.low_names & 1 << name != 0
    }
}

/// An abbreviation table, for units of one encoding (sizes depend on it).
pub struct Table {
    pub encoding: Encoding,
    /// Codes 1, 2, 3... in order (as compilers number them).
    dense: Vec<Abbrev>,
    /// The others.
    sparse: FastMap<u64, Abbrev>,
    attrs: Vec<Attr>,
    /// For gimli's attribute parser (see [`read_with`]).
    none: gimli::Abbreviations,
}

impl Table {
    /// The table at `offset` of `.debug_abbrev` data `section`.
    pub fn parse(section: &[u8], offset: u64, endian: RunTimeEndian, encoding: Encoding) -> Option<Table> {
        let mut r = EndianSlice::new(section.get(usize::try_from(offset).ok()?..)?, endian);
        let mut t = Table { encoding, dense: Vec::new(), sparse: FastMap::default(), attrs: Vec::new(), none: Default::default() };
        // gimli ends a table that runs to the end of the section without
        // its closing 0 where the section ends.
        while !r.is_empty() {
            let Some(code) = r.read_uleb128().ok().filter(|&c| c != 0) else { break };
            let (tag, has_children) = entry_head(&mut r)?;
            let first = t.attrs.len();
            let mut fixed = Some(0usize);
            let mut low_names = 0u64;
            while let Some(spec) = attribute(&mut r)? {
                let size = fixed_size(spec.form(), encoding);
                fixed = fixed.zip(size).map(|(a, b)| a + b as usize);
                low_names |= 1u64.checked_shl(spec.name().0.into()).unwrap_or(0);
                t.attrs.push(Attr { spec, size });
            }
            let attrs = (u32::try_from(first).ok()?, u32::try_from(t.attrs.len()).ok()?);
            let abbrev = Abbrev { tag, has_children, attrs, fixed, low_names };
            if code == t.dense.len() as u64 + 1 && !t.sparse.contains_key(&code) {
                t.dense.push(abbrev);
            } else if code <= t.dense.len() as u64 || t.sparse.insert(code, abbrev).is_some() {
                return None;
            }
        }
        Some(t)
    }

    #[inline]
    pub fn get(&self, code: u64) -> Option<&Abbrev> {
        match usize::try_from(code.wrapping_sub(1)).ok().and_then(|i| self.dense.get(i)) {
            Some(a) => Some(a),
            None => self.sparse.get(&code),
        }
    }

    pub fn attrs(&self, a: &Abbrev) -> &[Attr] {
        &self.attrs[a.attrs.0 as usize..a.attrs.1 as usize]
    }

    /// Steps over the attribute values of a DIE of abbreviation `a`.
    #[inline]
    pub fn skip_all(&self, input: &mut R<'_>, a: &Abbrev) -> Option<()> {
        match a.fixed {
            Some(n) => input.skip(n).ok(),
            None => {
                let mut pending = 0;
                for attr in self.attrs(a) {
                    match attr.size {
                        Some(n) => pending += n as usize,
                        None => {
                            input.skip(std::mem::take(&mut pending)).ok()?;
                            skip_form(input, attr.spec.form(), self.encoding)?;
                        }
                    }
                }
                input.skip(pending).ok()
            }
        }
    }

    /// Steps over one attribute value.
    #[inline]
    pub fn skip(&self, input: &mut R<'_>, attr: &Attr) -> Option<()> {
        match attr.size {
            Some(n) => input.skip(n as usize).ok(),
            None => skip_form(input, attr.spec.form(), self.encoding),
        }
    }

    /// Reads one attribute value, as gimli parses it.
    pub fn read<'a>(&self, input: &mut R<'a>, attr: &Attr) -> Option<AttributeValue<R<'a>>> {
        read_with(input, attr.spec, self.encoding, &self.none)
    }
}

/// Reads one value of attribute `spec`, as gimli parses it.
pub fn read<'a>(input: &mut R<'a>, spec: AttributeSpecification, encoding: Encoding) -> Option<AttributeValue<R<'a>>> {
    read_with(input, spec, encoding, &gimli::Abbreviations::default())
}

/// gimli's attribute parser sits on a DIE reader, which wants a table it
/// never looks in for this.
fn read_with<'a>(input: &mut R<'a>, spec: AttributeSpecification, encoding: Encoding, none: &gimli::Abbreviations) -> Option<AttributeValue<R<'a>>> {
    let mut e = gimli::EntriesRaw::new(*input, encoding, none, UnitOffset(0));
    let value = e.read_attribute(spec).ok()?.raw_value();
    input.skip(e.next_offset().0).ok()?;
    Some(value)
}

/// Abbreviation `code` of the table at `offset`: its tag, whether it has
/// children, and its attributes, read without the entries after it. A
/// unit's header needs only its own DIE's abbreviation; the whole table
/// (often one per unit: thousands in a large library's debug file) is
/// read only when the unit is decoded.
pub fn find(section: &[u8], offset: u64, code: u64, endian: RunTimeEndian) -> Option<(u16, bool, Vec<AttributeSpecification>)> {
    let mut r = EndianSlice::new(section.get(usize::try_from(offset).ok()?..)?, endian);
    loop {
        let c = r.read_uleb128().ok().filter(|&c| c != 0)?;
        let (tag, has_children) = entry_head(&mut r)?;
        let mut specs = Vec::new();
        while let Some(spec) = attribute(&mut r)? {
            if c == code {
                specs.push(spec);
            }
        }
        if c == code {
            return Some((tag, has_children, specs));
        }
    }
}

/// An entry's tag and children flag.
fn entry_head(r: &mut R<'_>) -> Option<(u16, bool)> {
    let tag = r.read_uleb128_u16().ok().filter(|&t| t != 0)?;
    match r.read_u8().ok()? {
        0 => Some((tag, false)),
        1 => Some((tag, true)),
        _ => None,
    }
}

/// The next attribute of an entry (`Some(None)` at its closing 0, 0).
fn attribute(r: &mut R<'_>) -> Option<Option<AttributeSpecification>> {
    let name = r.read_uleb128_u16().ok()?;
    let form = r.read_uleb128_u16().ok()?;
    match (name, form) {
        (0, 0) => return Some(None),
        (0, _) | (_, 0) => return None,
        _ => {}
    }
    let implicit = if form == gimli::DW_FORM_implicit_const.0 { Some(r.read_sleb128().ok()?) } else { None };
    Some(Some(AttributeSpecification::new(gimli::DwAt(name), DwForm(form), implicit)))
}

/// The size of a value of `form`, when it does not depend on the value.
#[allow(non_upper_case_globals)]
fn fixed_size(form: DwForm, enc: Encoding) -> Option<u8> {
    use gimli::constants::*;
    let word = enc.format.word_size();
    Some(match form {
        DW_FORM_addr => enc.address_size,
        DW_FORM_implicit_const | DW_FORM_flag_present => 0,
        DW_FORM_data1 | DW_FORM_flag | DW_FORM_strx1 | DW_FORM_ref1 | DW_FORM_addrx1 => 1,
        DW_FORM_data2 | DW_FORM_ref2 | DW_FORM_addrx2 | DW_FORM_strx2 => 2,
        DW_FORM_addrx3 | DW_FORM_strx3 => 3,
        DW_FORM_data4 | DW_FORM_ref_sup4 | DW_FORM_ref4 | DW_FORM_strx4 | DW_FORM_addrx4 => 4,
        DW_FORM_data8 | DW_FORM_ref8 | DW_FORM_ref_sig8 | DW_FORM_ref_sup8 => 8,
        DW_FORM_data16 => 16,
        DW_FORM_sec_offset | DW_FORM_GNU_ref_alt | DW_FORM_strp | DW_FORM_strp_sup | DW_FORM_GNU_strp_alt | DW_FORM_line_strp => word,
        // An address in DWARF 2, an offset since.
        DW_FORM_ref_addr if enc.version == 2 => enc.address_size,
        DW_FORM_ref_addr => word,
        _ => return None,
    })
}

/// Steps over a value of a form without a fixed size.
#[allow(non_upper_case_globals)]
fn skip_form(r: &mut R<'_>, mut form: DwForm, enc: Encoding) -> Option<()> {
    use gimli::constants::*;
    loop {
        if let Some(n) = fixed_size(form, enc) {
            return r.skip(n as usize).ok();
        }
        let len = match form {
            DW_FORM_indirect => {
                form = DwForm(r.read_uleb128_u16().ok()?);
                continue;
            }
            DW_FORM_block1 => r.read_u8().ok()? as usize,
            DW_FORM_block2 => r.read_u16().ok()? as usize,
            DW_FORM_block4 => r.read_u32().ok()? as usize,
            DW_FORM_block | DW_FORM_exprloc => usize::try_from(r.read_uleb128().ok()?).ok()?,
            DW_FORM_string => {
                r.read_null_terminated_slice().ok()?;
                0
            }
            DW_FORM_udata | DW_FORM_sdata | DW_FORM_ref_udata | DW_FORM_strx | DW_FORM_GNU_str_index | DW_FORM_addrx
            | DW_FORM_GNU_addr_index | DW_FORM_loclistx | DW_FORM_rnglistx => {
                r.skip_leb128().ok()?;
                0
            }
            _ => return None,
        };
        return r.skip(len).ok();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENC: Encoding = Encoding { format: gimli::Format::Dwarf32, version: 4, address_size: 8 };

    fn uleb(out: &mut Vec<u8>, mut v: u64) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            out.push(if v == 0 { b } else { b | 0x80 });
            if v == 0 {
                return;
            }
        }
    }

    /// An entry: code, tag, children byte, (name, form) pairs.
    type Entry<'a> = (u64, u16, u8, &'a [(u16, u16)]);

    /// A table of entries.
    fn table(entries: &[Entry<'_>]) -> Vec<u8> {
        let mut t = Vec::new();
        for (code, tag, children, attrs) in entries {
            uleb(&mut t, *code);
            uleb(&mut t, *tag as u64);
            t.push(*children);
            for (n, f) in *attrs {
                uleb(&mut t, *n as u64);
                uleb(&mut t, *f as u64);
                if *f == 0x21 {
                    t.push(0x7f); // implicit const -1
                }
            }
            t.extend([0, 0]);
        }
        t.push(0);
        t
    }

    /// What the table finds is what gimli's parse finds, code by code,
    /// for dense and sparse codes; a single entry is found alike.
    #[test]
    fn tables_read_as_gimli_reads_them() {
        let attrs: &[(u16, u16)] = &[(0x03, 0x08), (0x3a, 0x0b), (0x49, 0x13), (0x1c, 0x21)];
        let data = table(&[(1, 0x11, 1, attrs), (2, 0x2e, 0, &[(0x11, 0x01)]), (7, 0x34, 1, &[]), (3, 0x24, 0, attrs)]);
        let ours = Table::parse(&data, 0, RunTimeEndian::Little, ENC).expect("ours");
        let theirs = gimli::DebugAbbrev::new(&data, RunTimeEndian::Little).abbreviations(gimli::DebugAbbrevOffset(0)).expect("gimli");
        for code in 0..10 {
            let (a, b) = (ours.get(code), theirs.get(code));
            assert_eq!(a.is_some(), b.is_some(), "code {code}");
            let (Some(a), Some(b)) = (a, b) else { continue };
            assert_eq!((a.tag, a.has_children), (b.tag().0, b.has_children()), "code {code}");
            let specs: Vec<_> = ours.attrs(a).iter().map(|x| x.spec).collect();
            assert_eq!(specs, b.attributes(), "code {code}");
            for n in 0..80 {
                assert_eq!(a.has(n), n < 64 && specs.iter().any(|s| s.name().0 == n), "code {code} name {n}");
            }
            let found = find(&data, 0, code, RunTimeEndian::Little).expect("found");
            assert_eq!((found.0, found.1, &found.2[..]), (a.tag, a.has_children, &specs[..]));
        }
        assert!(find(&data, 0, 4, RunTimeEndian::Little).is_none());
    }

    /// gimli's failures: a repeated code (dense or sparse), a zero tag, a
    /// bad children byte, a zero name or form.
    #[test]
    fn malformed_tables_fail() {
        for bad in [
            table(&[(1, 0x11, 0, &[]), (1, 0x2e, 0, &[])]),
            table(&[(5, 0x11, 0, &[]), (5, 0x2e, 0, &[])]),
            table(&[(1, 0x11, 0, &[]), (2, 0x2e, 0, &[]), (1, 0x2e, 0, &[])]),
            table(&[(1, 0, 0, &[])]),
            table(&[(1, 0x11, 2, &[])]),
            table(&[(1, 0x11, 0, &[(0, 0x08)])]),
            table(&[(1, 0x11, 0, &[(0x03, 0)])]),
        ] {
            assert!(Table::parse(&bad, 0, RunTimeEndian::Little, ENC).is_none(), "{bad:?}");
            assert!(gimli::DebugAbbrev::new(&bad[..], RunTimeEndian::Little).abbreviations(gimli::DebugAbbrevOffset(0)).is_err());
        }
        // Without its closing 0 a table ends with the section.
        let mut open = table(&[(1, 0x11, 0, &[])]);
        open.pop();
        assert!(Table::parse(&open, 0, RunTimeEndian::Little, ENC).is_some_and(|t| t.get(1).is_some()));
    }

    /// Stepping over values (fixed or not, one or all) ends where gimli's
    /// parser ends, and reading gives gimli's values.
    #[test]
    fn values_are_stepped_over_as_gimli_parses_them() {
        // name, form, value bytes
        let cases: &[(u16, &[u8])] = &[
            (0x01, &[1, 2, 3, 4, 5, 6, 7, 8]),
            (0x0b, &[9]),
            (0x05, &[1, 2]),
            (0x06, &[1, 2, 3, 4]),
            (0x08, b"main\0"),
            (0x0f, &[0x80, 0x01]),
            (0x0d, &[0x7f]),
            (0x0a, &[2, 0xaa, 0xbb]),
            (0x03, &[1, 0, 0xcc]),
            (0x18, &[1, 0x9c]),
            (0x19, &[]),
            (0x21, &[]),
            (0x16, &[0x0b, 7]),
            (0x13, &[4, 3, 2, 1]),
            (0x10, &[4, 3, 2, 1]),
        ];
        let attrs: Vec<(u16, u16)> = cases.iter().enumerate().map(|(i, (f, _))| (0x3000 + i as u16, *f)).collect();
        let data = table(&[(1, 0x34, 0, &attrs)]);
        let t = Table::parse(&data, 0, RunTimeEndian::Little, ENC).expect("table");
        let a = t.get(1).expect("abbrev");
        assert!(a.fixed.is_none());
        let die: Vec<u8> = cases.iter().flat_map(|(_, b)| b.iter().copied()).chain([0xee]).collect();
        let mut all = EndianSlice::new(&die, RunTimeEndian::Little);
        t.skip_all(&mut all, a).expect("skip all");
        assert_eq!(all.len(), 1);
        let theirs = gimli::DebugAbbrev::new(&data[..], RunTimeEndian::Little).abbreviations(gimli::DebugAbbrevOffset(0)).expect("gimli");
        let mut g = gimli::EntriesRaw::new(EndianSlice::new(&die, RunTimeEndian::Little), ENC, &theirs, UnitOffset(0));
        let (mut one, mut read) = (EndianSlice::new(&die, RunTimeEndian::Little), EndianSlice::new(&die, RunTimeEndian::Little));
        for attr in t.attrs(a) {
            t.skip(&mut one, attr).expect("skip one");
            let value = t.read(&mut read, attr).expect("read");
            assert_eq!(value, g.read_attribute(attr.spec).expect("gimli").raw_value(), "{:?}", attr.spec);
            assert_eq!((one.len(), read.len()), (g.next_offset().0.abs_diff(die.len()), one.len()));
        }
        // Cut short, a value fails.
        let mut short = EndianSlice::new(&die[..3], RunTimeEndian::Little);
        assert!(t.skip_all(&mut short, a).is_none());
        let fixed = table(&[(1, 0x24, 0, &[(0x03, 0x0e), (0x0b, 0x0b), (0x3e, 0x0b)])]);
        let t = Table::parse(&fixed, 0, RunTimeEndian::Little, ENC).expect("table");
        assert_eq!(t.get(1).and_then(|a| a.fixed), Some(6));
    }
}
