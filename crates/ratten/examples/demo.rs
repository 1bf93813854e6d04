//! ratten's demo on its built-in data: the UCI handwritten digits (1797 images of 8x8 pixels).
//!
//! It loads the CSV into one tensor and works with it the way a PyTorch user would: views that
//! share memory, a reshape that must copy, selection, printing, dtypes, errors as values.
//! Later issues grow it into training a classifier with ratten's operators and autograd.

use std::io::Read;

use ratten::{Result, ScalarType, Tensor};

const DIGITS_GZ: &[u8] = include_bytes!("../data/digits.csv.gz");

fn load_digits() -> Result<Tensor> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(DIGITS_GZ)
        .read_to_string(&mut text)
        .map_err(|e| ratten::Error::runtime(format!("cannot read digits.csv.gz: {e}")))?;
    let mut values: Vec<u8> = Vec::new();
    let mut rows = 0i64;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        for field in line.split(',') {
            let v: u8 = field
                .trim()
                .parse()
                .map_err(|e| ratten::Error::value(format!("bad field {field:?}: {e}")))?;
            values.push(v);
        }
        rows += 1;
    }
    Tensor::from_vec(values, &[rows, 65])
}

fn main() -> Result<()> {
    let table = load_digits()?;
    println!(
        "digits table: sizes {:?}, dtype {}",
        table.sizes().as_slice(),
        table.dtype()
    );

    // Pixels and labels are views of the same storage: no copy.
    let pixels = table.narrow(1, 0, 64)?;
    let labels = table.select(1, 64)?;
    println!(
        "pixels: sizes {:?}, strides {:?}, contiguous: {}",
        pixels.sizes().as_slice(),
        pixels.strides().as_slice(),
        pixels.is_contiguous()
    );

    // Splitting the 64 pixels into 8x8 is expressible with strides: `view` shares memory.
    let images = pixels.view(&[-1, 8, 8])?;
    println!(
        "images: a view with sizes {:?}, strides {:?}",
        images.sizes().as_slice(),
        images.strides().as_slice()
    );
    // Flattening everything is not (rows are 65 apart): `view` refuses, `reshape` copies.
    match pixels.view(&[-1]) {
        Ok(_) => println!("flat view succeeded"),
        Err(e) => println!("a flat view is refused, as in PyTorch:\n  {e}"),
    }
    let flat = pixels.reshape(&[-1])?;
    println!(
        "reshape copied instead: sizes {:?}, contiguous: {}",
        flat.sizes().as_slice(),
        flat.is_contiguous()
    );

    println!("\nfirst ten labels:\n{}", labels.narrow(0, 0, 10)?);
    println!(
        "\nimage 0 (label {}):\n{}",
        labels.select(0, 0)?.item()?,
        images.select(0, 0)?
    );

    // The mean image of each class, computed over the tensor's data.
    let label_values = labels.contiguous()?.to_vec::<u8>()?;
    let pixel_values = flat.to_vec::<u8>()?;
    let mut means = vec![0f32; 10 * 64];
    let mut counts = [0usize; 10];
    for (row, &label) in label_values.iter().enumerate() {
        counts[label as usize] += 1;
        for p in 0..64 {
            means[label as usize * 64 + p] += pixel_values[row * 64 + p] as f32;
        }
    }
    for (c, count) in counts.iter().enumerate() {
        for p in 0..64 {
            means[c * 64 + p] /= *count as f32;
        }
    }
    let means = Tensor::from_vec(means, &[10, 8, 8])?;
    println!("\nimages per class: {counts:?}");
    println!("mean image of class 3:\n{}", means.select(0, 3)?);

    // Transposed and expanded views share memory with their base.
    let t = means.select(0, 3)?.t()?;
    println!(
        "\ntransposed view: strides {:?}, contiguous: {}",
        t.strides().as_slice(),
        t.is_contiguous()
    );
    let expanded = means.select(0, 3)?.unsqueeze(0)?.expand(&[4, 8, 8])?;
    println!(
        "expanded view: sizes {:?}, strides {:?}",
        expanded.sizes().as_slice(),
        expanded.strides().as_slice()
    );

    let half = Tensor::from_vec(vec![0.5f32, 1.25, -3.0], &[3])?;
    println!("\na float tensor: {half}");
    println!("random normal (seeded): {}", {
        ratten::aten::random::manual_seed(0);
        Tensor::randn(&[4], ScalarType::Float)?
    });
    Ok(())
}
