# R's coxph on every bundled data set's covariates and on synthetic edge cases: the reference values of
# tests/regression/r_reference/coxph.json (read by tests/regression/test_cox_against_r.py; R is not needed to test).
#
# Regenerate (R >= 4.2 with survival >= 3.5; apt-get install r-base-core r-cran-survival), from the repository root:
#     Rscript tools/r_reference/coxph.R
#
# coxph runs with its convergence rule tightened (eps = 1e-14): the values are the maximum of the partial likelihood
# to the last digits, not where the default rule (1e-9) happens to stop. Categorical covariates are factors whose
# first level (C collation, numbers numerically) is the reference; the fixture names the levels so the test asks
# dpsurv for the same reference.
suppressPackageStartupMessages({library(survival); library(jsonlite)})
invisible(Sys.setlocale("LC_COLLATE", "C"))
bundled <- "dpsurv_core/data/bundled"
control <- coxph.control(eps = 1e-14, toler.chol = 1e-15, iter.max = 200)

outcome <- list(
  lung = c("time", "status"), kidney = c("time", "status"), leukemia = c("time", "status"),
  gehan = c("time", "cens"), mgus2 = c("futime", "death"), myeloid = c("futime", "death"),
  ovarian = c("futime", "fustat"), stanford2 = c("time", "status"), veteran = c("time", "status"),
  pbc = c("time", "status"), transplant = c("futime", "event"), flchain = c("futime", "death"))
event_code <- list(pbc = 2, transplant = "death")

cases <- list(
  list(data = "lung", covariates = c("age", "sex"), categorical = character()),
  list(data = "lung", covariates = c("age", "sex", "ph.ecog", "ph.karno", "pat.karno", "meal.cal", "wt.loss"),
       categorical = c("sex", "ph.ecog")),
  list(data = "kidney", covariates = c("age", "sex", "frail"), categorical = "sex"),
  list(data = "leukemia", covariates = "x", categorical = "x"),
  list(data = "gehan", covariates = "treat", categorical = "treat"),
  list(data = "mgus2", covariates = c("age", "sex", "hgb", "creat", "mspike"), categorical = "sex"),
  list(data = "myeloid", covariates = c("trt", "sex", "flt3"), categorical = c("trt", "sex", "flt3")),
  list(data = "ovarian", covariates = c("age", "rx", "ecog.ps"), categorical = character()),
  list(data = "ovarian", covariates = c("age", "rx", "resid.ds", "ecog.ps"), categorical = c("rx", "resid.ds", "ecog.ps")),
  list(data = "stanford2", covariates = c("age", "t5"), categorical = character()),
  list(data = "veteran", covariates = c("trt", "karno", "diagtime", "age", "prior", "celltype"),
       categorical = c("trt", "prior", "celltype")),
  list(data = "pbc", covariates = c("age", "sex", "bili", "albumin", "protime", "edema"), categorical = c("sex", "edema")),
  list(data = "transplant", covariates = c("age", "sex", "abo", "year"), categorical = c("sex", "abo")),
  list(data = "flchain", covariates = c("age", "sex", "kappa", "lambda", "creatinine", "mgus"), categorical = "sex"))

chi <- function(statistic, df) c(statistic, df, pchisq(statistic, df, lower.tail = FALSE))

summarise <- function(fit) {
  s <- summary(fit)
  list(coefficients = unname(coef(fit)), se = unname(sqrt(diag(fit$var))), p_value = unname(s$coefficients[, 5]),
       loglik = fit$loglik, iterations = fit$iter,
       # the unrounded statistics (summary.coxph prints the Wald and score statistics rounded to 2 decimals)
       likelihood_ratio = chi(2 * diff(fit$loglik), length(coef(fit))),
       wald = chi(unname(fit$wald.test), length(coef(fit))), score = chi(unname(fit$score), length(coef(fit))))
}

levels_of <- function(x) if (is.numeric(x)) as.character(sort(unique(x))) else sort(unique(as.character(x)))

out <- list(generated_by = "tools/r_reference/coxph.R", r_version = R.version.string,
            survival_version = as.character(packageVersion("survival")), bundled = list(), synthetic = list())
for (case in cases) {
  d <- read.csv(file.path(bundled, paste0(case$data, ".csv")), stringsAsFactors = FALSE)
  y <- outcome[[case$data]]
  ev <- d[[y[2]]]
  ev <- if (!is.null(event_code[[case$data]])) as.integer(ev == event_code[[case$data]]) else as.integer(ev)
  frame <- data.frame(time = d[[y[1]]], event = ev)
  lv <- list()
  for (v in case$covariates) {
    if (v %in% case$categorical) {
      lv[[v]] <- levels_of(d[[v]])
      frame[[v]] <- factor(as.character(d[[v]]), levels = lv[[v]])
    } else frame[[v]] <- d[[v]]
  }
  frame <- frame[complete.cases(frame), ]
  form <- as.formula(paste("Surv(time, event) ~", paste(sprintf("`%s`", case$covariates), collapse = " + ")))
  for (ties in c("efron", "breslow")) {
    fit <- coxph(form, data = frame, ties = ties, control = control)
    out$bundled[[length(out$bundled) + 1]] <- c(list(data = case$data, covariates = case$covariates,
      categorical = if (length(lv)) lv else setNames(list(), character()), ties = ties, n = fit$n,
      names = names(coef(fit))), summarise(fit))
  }
}

# synthetic edge cases: heavy ties (few distinct times), and a factor level with no event (its subjects left out:
# the limit R's coxph converges to as that coefficient goes to minus infinity)
set.seed(20260401)
n <- 80
heavy <- data.frame(time = sample(1:4, n, replace = TRUE), event = rbinom(n, 1, 0.7),
                    x1 = round(rnorm(n), 3), x2 = rbinom(n, 1, 0.4), x3 = round(runif(n, 20, 80)))
n <- 40
noevent <- data.frame(time = sample(1:15, n, replace = TRUE), event = rbinom(n, 1, 0.6),
                      g = sample(c("a", "b", "c"), n, replace = TRUE), age = round(rnorm(n, 60, 8)))
noevent$event[noevent$g == "b"] <- 0L
notie <- data.frame(time = round(rexp(60) * 100, 6) + (1:60) * 1e-7, event = rbinom(60, 1, 0.8),
                    x1 = round(rnorm(60), 4), x2 = rbinom(60, 1, 0.5))
synthetic <- list(
  list(name = "heavy_ties", frame = heavy, formula = Surv(time, event) ~ x1 + x2 + x3, fit_rows = rep(TRUE, nrow(heavy))),
  list(name = "no_event_level", frame = noevent, formula = Surv(time, event) ~ age + g, fit_rows = noevent$g != "b"),
  list(name = "no_ties", frame = notie, formula = Surv(time, event) ~ x1 + x2, fit_rows = rep(TRUE, nrow(notie))))
for (s in synthetic) {
  for (ties in c("efron", "breslow")) {
    fit <- coxph(s$formula, data = s$frame[s$fit_rows, ], ties = ties, control = control)
    out$synthetic[[length(out$synthetic) + 1]] <- c(list(name = s$name, ties = ties, data = s$frame,
                                                         names = names(coef(fit))), summarise(fit))
  }
}
dir.create("tests/regression/r_reference", showWarnings = FALSE, recursive = TRUE)
writeLines(toJSON(out, digits = I(17), auto_unbox = TRUE, pretty = FALSE, dataframe = "columns"),
           "tests/regression/r_reference/coxph.json")
